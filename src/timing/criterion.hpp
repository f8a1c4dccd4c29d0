#pragma once

#include <cstddef>

namespace kbench::timing {

// Decides when a measurement has enough samples. One rule a class, one class a file.
class Criterion {
  public:
    virtual ~Criterion() = default;
    virtual void add_sample(double sample_us) = 0;
    // elapsed_s: wall time spent sampling so far.
    virtual bool is_finished(double elapsed_s) const = 0;
    // Whether the rule's own goal was met, rather than a cap.
    virtual bool converged() const = 0;
    // Samples taken before these many are warm-up and are dropped.
    virtual std::size_t discard_first() const { return 0; }
};

}  // namespace kbench::timing
