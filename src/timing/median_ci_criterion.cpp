#include "timing/median_ci_criterion.hpp"

#include <algorithm>
#include <limits>

#include "timing/statistics.hpp"

namespace kbench::timing {

MedianCiCriterion::MedianCiCriterion(int min_samples, int max_samples, double max_seconds,
                                     double target_rel_halfwidth)
    : min_samples_(std::max(1, min_samples)),
      max_samples_(std::max(min_samples_, max_samples)),
      max_seconds_(max_seconds),
      target_(target_rel_halfwidth) {}

void MedianCiCriterion::add_sample(double sample_us) {
    sorted_.insert(std::upper_bound(sorted_.begin(), sorted_.end(), sample_us), sample_us);
}

double MedianCiCriterion::relative_halfwidth() const {
    if (sorted_.empty()) return std::numeric_limits<double>::infinity();
    double mid = quantile_sorted(sorted_, 0.5);
    if (mid <= 0) return std::numeric_limits<double>::infinity();
    Interval ci = median_ci95_sorted(sorted_);
    return (ci.hi - ci.lo) / 2 / mid;
}

bool MedianCiCriterion::converged() const {
    return int(sorted_.size()) >= min_samples_ && relative_halfwidth() < target_;
}

bool MedianCiCriterion::is_finished(double elapsed_s) const {
    if (converged()) return true;
    if (int(sorted_.size()) >= max_samples_) return true;
    // The time cap never cuts the minimum sample count short.
    return int(sorted_.size()) >= min_samples_ && elapsed_s >= max_seconds_;
}

}  // namespace kbench::timing
