#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/verdict.hpp"

namespace kbench::score {

// Compiled, as KernelBench counts it: not when the build failed, the module raised at import or
// has no ModelNew, or kbench refused to build it (a static rule).
bool kernelbench_compiled(const Verdict& verdict);

// A problem of the selection, for the denominators: level, id and name ("19_ReLU").
struct ProblemEntry {
    int level = 0;
    int id = 0;
    std::string name;
};

// One level scored as KernelBench's benchmark_eval_analysis scores it: only sample 0 of each
// problem, every problem of the level in the denominators (a problem without a sample-0 verdict
// is not compiled and not correct), a problem's speedup the baseline's mean over the
// candidate's mean runtime, fast_p the share of the problems that have a baseline whose
// speedup is strictly above p, the geometric mean over those correct ones.
struct KernelBenchView {
    int level = 0;
    std::size_t total = 0;      // problems of the level (the selection's)
    std::size_t evaluated = 0;  // problems with any verdict
    std::size_t compiled = 0;
    std::size_t correct = 0;
    std::size_t aligned = 0;  // problems with a baseline time: fast_p's denominator
    double geomean_speedup = 0;
    std::map<double, double> fast_p;
    std::string baseline;  // where the baseline times came from
};

// A problem's mean (ms) in KernelBench's results/timing file ({"level1": {"19_ReLU.py":
// {"mean": ms}}}), under its file name or its bare name; none when the file lacks it.
std::optional<double> baseline_file_ms(const nlohmann::json& file, int level,
                                       const std::string& name);

// baseline: KernelBench's results/timing file ({"level1": {"19_ReLU.py": {"mean": ms}}}), or
// null to use each verdict's own baseline timing (its mean); then every problem counts as one
// with a baseline.
std::vector<KernelBenchView> kernelbench_view(const std::vector<Verdict>& verdicts,
                                              const std::vector<ProblemEntry>& problems,
                                              const nlohmann::json& baseline,
                                              const std::vector<double>& thresholds = {
                                                  0.0, 0.5, 0.8, 1.0, 1.5, 2.0});

std::string format_kernelbench_view(const KernelBenchView& view);

}  // namespace kbench::score
