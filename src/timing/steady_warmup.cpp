#include "timing/steady_warmup.hpp"

#include <algorithm>

namespace kbench::timing {

SteadyWarmup::SteadyWarmup(int min_calls, int max_calls, double max_seconds, double tolerance)
    : min_calls_(std::max(1, min_calls)),
      max_calls_(std::max(min_calls_, max_calls)),
      max_seconds_(max_seconds),
      tolerance_(tolerance) {}

void SteadyWarmup::add_call(double call_us) {
    calls_.push_back(call_us);
}

bool SteadyWarmup::steady() const {
    if (calls_.size() < 3) return false;
    auto last = calls_.end() - 3;
    auto [lo, hi] = std::minmax_element(last, calls_.end());
    return *lo > 0 && (*hi - *lo) / *lo <= tolerance_;
}

bool SteadyWarmup::is_finished(double elapsed_s) const {
    int n = calls();
    if (n < min_calls_) return false;
    return steady() || n >= max_calls_ || elapsed_s >= max_seconds_;
}

}  // namespace kbench::timing
