#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/verdict.hpp"

namespace kbench::score {

// One problem of a run as the score sees it: its candidates' verdicts boiled down, against the
// baseline the score was asked for.
struct ProblemOutcome {
    int level = 0;
    int id = 0;
    std::string name;
    std::size_t candidates = 0;          // verdicts (0: no usable candidate, or not evaluated)
    std::size_t correct_candidates = 0;  // of them correct
    bool correct = false;                // some candidate is correct
    std::optional<double> best_speedup;  // the best correct candidate's, against the baseline
    bool has_baseline = true;            // false: the baseline has no time for this problem
    bool flagged = false;                // the audit flagged the problem
};

// A point and its 95% bootstrap interval (percentiles over replicates that resample problems).
struct Interval {
    double value = 0;
    double lo = 0;
    double hi = 0;
    bool defined = false;  // false: no problem to compute it from (geomean without correct ones)
};

struct LevelScore {
    std::string level;  // "1", "2", ... or "all"
    std::size_t problems = 0;
    std::size_t candidates = 0;
    std::size_t correct_candidates = 0;
    Interval correct_rate;  // correct candidates / candidates
    std::map<double, Interval> fast_p;
    Interval geomean;                           // over each problem's best correct candidate
    std::size_t geomean_problems = 0;           // problems in it
    std::vector<std::string> without_baseline;  // problems the baseline has no time for
    std::size_t flagged_left_out = 0;
};

struct BootstrapOptions {
    int replicates = 2000;
    std::uint64_t seed = 20261202;
};

// fast_p: the share of the level's problems whose best correct candidate is at least p times
// faster than the baseline (p = 0: correct at all); a problem without a baseline time counts in
// the denominator and is never fast (and is listed). The geometric mean is over problems with a
// correct candidate and a speedup. Intervals resample the level's problems with replacement
// (for "all", every problem), from a fixed seed: the same outcomes give the same intervals.
std::vector<LevelScore> score_levels(const std::vector<ProblemOutcome>& problems,
                                     const std::vector<double>& thresholds,
                                     const BootstrapOptions& options, bool exclude_flagged);

// Each problem's outcome from its verdicts. baseline: null for each verdict's own speedup
// (its baseline, timed beside it), else KernelBench's results/timing JSON, whose mean (ms) over
// the candidate's headline time is the speedup.
std::vector<ProblemOutcome> problem_outcomes(
    const std::vector<Verdict>& verdicts,
    const std::vector<std::tuple<int, int, std::string>>& problems, const nlohmann::json& baseline);

}  // namespace kbench::score
