#pragma once

#include <cstdint>
#include <vector>

namespace kbench::timing {

enum class Statistic { median, mean };

struct SpeedupEstimate {
    double speedup = 0;
    double ci_lo = 0;
    double ci_hi = 0;
};

// Speedup = statistic(baseline) / statistic(candidate), with a percentile bootstrap 95%
// interval from resampling both sample sets independently. Deterministic for a given seed.
SpeedupEstimate estimate_speedup(const std::vector<double>& baseline_us,
                                 const std::vector<double>& candidate_us, Statistic statistic,
                                 int resamples = 2000, std::uint64_t seed = 0x6b62656e6368ULL);

// Speedup from alternating rounds (each round: requests of the baseline's and the candidate's
// alternating; ratio = the baseline's median over the candidate's): the geometric mean of the
// rounds' ratios, with a 95% interval from Student's t over their logarithms. Drift that hits a
// whole round hits both sides of its ratio; what differs between rounds is the interval's
// spread. systematic (one standard deviation, relative) is what differs between the two sides
// for the whole evaluation: it is added to the interval's half-width in quadrature (1.96 of
// it). At least two rounds.
SpeedupEstimate speedup_over_rounds(const std::vector<double>& round_ratios, double systematic = 0);

// Student's t quantile at 0.975 for df degrees of freedom (df >= 1).
double t_975(int df);

}  // namespace kbench::timing
