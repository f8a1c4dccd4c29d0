#pragma once

#include <chrono>
#include <optional>

namespace kbench::worker {

// A phase's limit on a sandbox's time. It counts only while the clock runs: while the judge
// sends to the sandbox or waits for its reply (and the digests of that reply). From a reply to
// the next request it stands still, so the judge's own work (making inputs, the reference's
// outputs, comparisons, arbitration, the other sandbox's requests) is never the sandbox's time.
// Until start(), there is no limit and stop() does nothing.
class PhaseClock {
  public:
    using Clock = std::chrono::steady_clock;

    // A limit of `seconds`, the clock stopped at `now`: it runs from the first run().
    void start(double seconds, Clock::time_point now = Clock::now()) {
        stopped_at_ = now;
        deadline_ = now + std::chrono::milliseconds(static_cast<long long>(seconds * 1000));
    }
    void run(Clock::time_point now = Clock::now()) {
        if (!stopped_at_) return;
        deadline_ += now - *stopped_at_;
        stopped_at_.reset();
    }
    void stop(Clock::time_point now = Clock::now()) {
        if (!stopped_at_ && limited()) stopped_at_ = now;
    }
    bool running() const { return !stopped_at_; }
    bool limited() const { return deadline_ != Clock::time_point::max(); }
    // Takes seconds off what the phase has left (the sandbox's CPU time while it stood still).
    void charge(double seconds) {
        if (limited() && seconds > 0)
            deadline_ -= std::chrono::microseconds(static_cast<long long>(seconds * 1e6));
    }
    // When the phase's time runs out if the clock runs from `now` on (max: no limit).
    Clock::time_point deadline(Clock::time_point now = Clock::now()) const {
        if (!limited() || !stopped_at_) return deadline_;
        return deadline_ + (now - *stopped_at_);
    }

  private:
    Clock::time_point deadline_ = Clock::time_point::max();
    std::optional<Clock::time_point> stopped_at_;
};

}  // namespace kbench::worker
