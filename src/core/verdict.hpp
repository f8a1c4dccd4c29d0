#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "core/decision.hpp"
#include "core/status.hpp"

namespace kbench {

struct ProblemRef {
    std::optional<int> level;
    std::optional<int> id;
    std::string name;
    std::string sha256;
};

struct CandidateRef {
    std::string path;
    std::string sha256;
    std::string backend;
    std::optional<int> sample_id;
};

struct CorrectnessResult {
    int trials_passed = 0;
    int trials = 0;
    double max_abs_diff = 0;
    double max_rel_diff = 0;
    // Trials that missed the tolerance and were judged again against the reference at a wider
    // precision (float64 for fp32): null when none was.
    json arbitration;
};

// Summary of one set of timing samples, in microseconds.
struct TimingResult {
    double median_us = 0;
    double mean_us = 0;
    double min_us = 0;
    double p10_us = 0;
    double p90_us = 0;
    int n = 0;
    bool converged = false;
    std::string statistic = "median";  // the headline: median (strict) or mean (kernelbench)
    double max_us = 0;
    double std_us = 0;  // the population standard deviation (numpy's default, as KernelBench's)

    double headline_us() const { return statistic == "mean" ? mean_us : median_us; }

    json to_json() const;
    // Also reads a worker's measurement, which carries the same fields and more.
    static TimingResult from_json(const json& j);
};

struct Finding {
    std::string rule;
    Severity severity = Severity::reject;
    std::string detail;
    int line = 0;          // the candidate's source line it points at (0: none)
    std::string evidence;  // that line, or what was measured
};

struct KernelShare {
    std::string name;
    std::string origin;  // "candidate" or "library"
    double share = 0;    // of the kernel time in the candidate's model calls
    std::uint64_t count = 0;
    double total_us = 0;
    std::string streams;  // "7" or "7,13"
};

// One candidate under one configuration: the verdict (docs/semantics.md, "Verdicts").
struct Verdict {
    ProblemRef problem;
    CandidateRef candidate;
    json config;  // mode, precision, trials, seed, device, ...
    // The decision, written only by decide() (core/decision.hpp).
    Status status = Status::infra_error;
    Blame blame = Blame::kbench;
    std::string rule;  // the integrity rule that decided it, or empty
    std::string reason;
    CorrectnessResult correctness;
    std::optional<TimingResult> timing;
    std::optional<TimingResult> baseline;
    std::string baseline_kind = "eager";
    json baseline_precision;  // the precision flags the baseline was timed under
    // With rounds on a GPU: the kernels the reference's own sandbox ran while the baseline was
    // timed ({calls, kernel_us, kernels: [{name, count, total_us}]}), or null.
    json baseline_kernels;
    std::optional<double> speedup;
    std::optional<std::pair<double, double>> speedup_ci95;
    // Rounds the speedup and its interval come from (alternating rounds); 0: samples timed apart.
    int speedup_rounds = 0;
    std::vector<Finding> integrity;
    std::vector<KernelShare> kernels;
    json kernel_activity;  // the kernel table's summary (or why there is none); null: not asked
    json floor;            // the problem's floor on the device and the speed of light reached
    json problem_health;   // the audit's record of the problem (flags), or null
    // Device memory: each party's peak (the judge's, the sandboxes' as they reported them) and
    // the device's own peak as the judge saw it, with the plan they ran under; null: none.
    json memory;
    std::map<std::string, double> phases_s;
    std::string log;  // the candidate's own output, capped, kept for failures

    json to_json() const;
    static Verdict from_json(const json& j);
};

}  // namespace kbench
