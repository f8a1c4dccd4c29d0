#pragma once

#include <cstddef>

#include "timing/criterion.hpp"

namespace kbench::timing {

// A fixed number of samples, the first few discarded: KernelBench's reference protocol.
class FixedCountCriterion final : public Criterion {
  public:
    FixedCountCriterion(int count, int discard_first);

    void add_sample(double sample_us) override;
    bool is_finished(double elapsed_s) const override;
    bool converged() const override { return true; }
    std::size_t discard_first() const override { return discard_; }

  private:
    std::size_t target_;
    std::size_t discard_;
    std::size_t taken_ = 0;
};

}  // namespace kbench::timing
