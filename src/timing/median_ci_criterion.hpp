#pragma once

#include <vector>

#include "timing/criterion.hpp"

namespace kbench::timing {

// Stops when the 95% confidence half-width of the median falls under a fraction of the median,
// after a minimum number of samples; or at a cap on samples or seconds (then not converged).
class MedianCiCriterion final : public Criterion {
  public:
    MedianCiCriterion(int min_samples, int max_samples, double max_seconds,
                      double target_rel_halfwidth);

    void add_sample(double sample_us) override;
    bool is_finished(double elapsed_s) const override;
    bool converged() const override;

    // Current relative half-width (half the interval over the median); infinite with no data.
    double relative_halfwidth() const;

  private:
    int min_samples_;
    int max_samples_;
    double max_seconds_;
    double target_;
    std::vector<double> sorted_;
};

}  // namespace kbench::timing
