#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <optional>
#include <string>

#include "core/config.hpp"
#include "core/verdict.hpp"
#include "orchestrator/builds/builder_pool.hpp"
#include "orchestrator/devices/devices.hpp"
#include "orchestrator/engine/eval_engine.hpp"
#include "orchestrator/engine/evaluator.hpp"

namespace kbench::cli {

// Options every command that evaluates candidates takes.
struct RunOptions {
    std::string precision = "fp32";
    std::string mode = "strict";
    std::string tf32;    // empty: the mode's default
    std::string policy;  // empty: the mode's default
    std::vector<std::string> allow;
    std::vector<std::string> deny;
    std::string backend = "auto";
    int trials = 5;
    std::uint64_t seed = 42;
    bool quiet = false;
    bool verbose = false;
    bool no_timing = false;
    std::optional<double> tolerance;
    std::optional<double> device_memory_gib;  // --device-memory
    std::optional<std::string> python;
    std::optional<std::string> cache_dir;
    std::optional<std::string> gpu_peaks;
    int builders = 0;
    bool no_build_support = false;
    PhaseLimits limits;
    TimingConfig timing;
};

void add_run_options(CLI::App* command, RunOptions& options);

// Options several commands take, each defined here once: the same names, words and defaults
// wherever they apply.
void add_quiet_flag(CLI::App* command, bool& quiet);
void add_cache_dir_option(CLI::App* command, std::optional<std::string>& cache_dir);
// The build cache --cache-dir names (absolute), or the default one.
fs::path build_cache_dir(const std::optional<std::string>& cache_dir);

// The configuration these options describe, on the given device label ("cpu", "cuda:0").
CheckConfig make_config(const RunOptions& options, const std::string& device_label);

// Progress lines on stderr with the time since start, or nothing with --quiet.
std::function<void(const std::string&)> make_logger(const RunOptions& options);

// The build pool's settings for these options; cache and scratch paths made absolute.
orchestrator::BuilderOptions make_builder_options(const RunOptions& options,
                                                  const orchestrator::WorkerEnvironment& env,
                                                  const orchestrator::SandboxPolicy& policy,
                                                  const fs::path& scratch,
                                                  std::function<void(const std::string&)> log);

// A private scratch folder for this run; passable by the sandboxes' user when there is one.
fs::path make_scratch(const std::string& prefix, const orchestrator::SandboxPolicy& policy);

// An engine's settings (orchestrator/engine/eval_engine.hpp) for these options: the Python, the
// sandbox policy, a fresh scratch folder named from prefix (returned in scratch), workers' logs in
// log_dir (empty: the scratch folder's logs/); gpus (physical ids) on a GPU, cpu_judges on the CPU.
orchestrator::EngineOptions make_engine_options(const RunOptions& options,
                                                const CheckConfig& config,
                                                const std::string& python, DeviceKind device_kind,
                                                const std::vector<std::string>& gpus,
                                                int cpu_judges, const std::string& scratch_prefix,
                                                const fs::path& log_dir, fs::path& scratch,
                                                std::function<void(const std::string&)> log);

// An evaluator's settings on one device (check, dataset audit): the Python, the sandbox policy,
// a fresh scratch folder named from prefix (returned in scratch), worker logs in it.
orchestrator::EvaluatorOptions make_evaluator_options(const CheckConfig& config,
                                                      const std::string& python,
                                                      const orchestrator::DeviceChoice& device,
                                                      const std::string& scratch_prefix,
                                                      fs::path& scratch);

// The exit code of check and eval: 0 every candidate evaluated and correct, 1 some not correct
// (or problems without a usable candidate), 2 a verdict that is not the candidate's (kbench's
// own failure, a reference that failed, a problem that does not fit the device).
int exit_code(const std::vector<Verdict>& verdicts, bool failures_without_verdicts = false);

// Where an evaluation runs: --device (auto, cpu, cuda), --gpus (all, or ordinals) and
// --cpu-judges, checked against the machine (UsageError saying what to change).
struct DeviceSelection {
    DeviceKind kind = DeviceKind::cpu;
    std::vector<std::string> gpus;  // physical ids, on GPUs
};
DeviceSelection select_devices(const std::string& device, const std::string& gpus, int cpu_judges);

// A CLI11 check: an integer of at least 1, with a message that says so.
CLI::Validator at_least_one();

}  // namespace kbench::cli
