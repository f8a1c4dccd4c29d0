#pragma once

// Reference programs' times, kept per problem and setting under <cache>/baselines/ by
// `kbench baseline`, for scores against them (`kbench score --baseline compile`).

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/files.hpp"
#include "core/verdict.hpp"

namespace kbench::cli {

using json = nlohmann::json;

// How a reference was run: "eager", or torch.compile's mode ("default", "max-autotune", ...).
struct BaselineSetting {
    std::string problem_sha256;
    std::string precision;    // fp32, fp16, bf16
    std::string tf32;         // off, on, default
    std::string mode;         // eager or a compile mode
    json hello;               // the judge's: device, torch, cuda, python
    json timing;              // baseline_timing(TimingConfig)
    std::string key() const;  // SHA-256 of all of the above
};

// The part of a timing configuration a reference's own timing depends on: TimingConfig::to_json()
// less what only a candidate's rounds use (stop_below), so that such an option, old or new, does
// not send every kept baseline to be timed again.
json baseline_timing(const json& timing);

fs::path baselines_dir();  // <cache>/baselines

// The kept entry for a setting, or null.
json read_baseline(const BaselineSetting& setting);
void write_baseline(const BaselineSetting& setting, const json& entry);

// One problem's entry in KernelBench's results/timing JSON (milliseconds): mean, std, min, max,
// num_trials, hardware, device.
json kernelbench_timing_entry(const json& entry);

// KernelBench's file names: baseline_time_torch.json, or
// baseline_time_torch_compile_inductor_<mode>.json.
std::string kernelbench_timing_file(const std::string& mode);

// A results/timing-shaped table ({"level1": {"19_ReLU.py": {"mean": ms, ...}}}) of the kept
// entries of one mode for the verdicts' problems, timed with their protocol on their precision,
// TF32 setting and device: the newest entry of each problem. Its "mean" is the statistic of the
// verdicts' headline times (the median in strict mode), so that a speedup divides like by like.
// found counts the problems that have one.
json kept_baseline_table(const std::vector<Verdict>& verdicts, const std::string& mode, int* found);

}  // namespace kbench::cli
