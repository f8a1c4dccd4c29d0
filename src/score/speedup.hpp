#pragma once

#include <cstdint>
#include <vector>

namespace kbench::score {

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

}  // namespace kbench::score
