#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/verdict.hpp"

namespace kbench::score {

// fast_p: the share of problems with a correct candidate at least p times faster than the
// baseline (fast_0: correct at all). A problem counts its best candidate.
struct Score {
    std::size_t problems = 0;
    std::size_t candidates = 0;
    std::map<std::string, std::size_t> by_status;
    std::map<double, double> fast_p;  // p -> share of problems
    double geomean_speedup = 0;       // over problems with a correct, timed candidate; 0 if none
    std::size_t timed_problems = 0;
    std::size_t flagged_problems = 0;   // problems whose verdicts carry the audit's flags
    bool flagged_left_out = false;      // and those are not in the shares above
    std::size_t without_candidate = 0;  // selected problems with no usable candidate: failures
    bool timed = true;                  // false: no verdict was timed (fast_p above 0 is n/a)
};

// exclude_flagged: problems the audit flagged (constant or all-zero-passing outputs, a
// nondeterministic reference) are left out of every share, and the score says how many.
// without_candidate: selected problems no verdict speaks for (no usable candidate); each
// counts in every share's denominator as a failure.
Score score_verdicts(const std::vector<Verdict>& verdicts,
                     const std::vector<double>& thresholds = {0.0, 1.0, 1.5, 2.0},
                     bool exclude_flagged = false, std::size_t without_candidate = 0);

std::string format_score(const Score& score);

// Whether a is a better verdict for its problem than b: correct and fastest first, then the
// furthest along (incorrect, then runtime errors and timeouts, rejected, load errors and
// crashes, compile errors).
bool better_verdict(const Verdict& a, const Verdict& b);

}  // namespace kbench::score
