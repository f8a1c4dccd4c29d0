#pragma once

#include <vector>

namespace kbench::timing {

// Warm-up until steady: at least min_calls calls, then stop once the last three calls agree
// within a relative tolerance; never more than max_calls calls or max_seconds.
class SteadyWarmup {
  public:
    SteadyWarmup(int min_calls, int max_calls, double max_seconds, double tolerance);

    void add_call(double call_us);
    bool is_finished(double elapsed_s) const;
    bool steady() const;
    int calls() const { return int(calls_.size()); }

  private:
    int min_calls_;
    int max_calls_;
    double max_seconds_;
    double tolerance_;
    std::vector<double> calls_;
};

}  // namespace kbench::timing
