#pragma once

#include <condition_variable>
#include <mutex>

namespace kbench::orchestrator {

// Turns on one device among several judges. Work that may share the device (starting a judge,
// preparing a problem, compiling it) takes a shared turn; timing takes the device alone. A judge
// waiting to time keeps new shared turns from starting, so timing is never starved and nothing
// else runs on the device while it is timed.
class DeviceTurns {
  public:
    class Turn {
      public:
        Turn() = default;
        Turn(DeviceTurns* turns, bool alone) : turns_(turns), alone_(alone) {}
        Turn(Turn&& other) noexcept : turns_(other.turns_), alone_(other.alone_) {
            other.turns_ = nullptr;
        }
        Turn& operator=(Turn&&) = delete;
        Turn(const Turn&) = delete;
        ~Turn() {
            if (turns_) turns_->end(alone_);
        }

      private:
        DeviceTurns* turns_ = nullptr;
        bool alone_ = false;
    };

    Turn shared();
    Turn alone();

    // nullptr: no other judge shares the device, and every turn is granted at once.
    static Turn shared(DeviceTurns* turns) { return turns ? turns->shared() : Turn(); }
    static Turn alone(DeviceTurns* turns) { return turns ? turns->alone() : Turn(); }

  private:
    void end(bool alone);

    std::mutex mutex_;
    std::condition_variable changed_;
    int sharing_ = 0;
    int waiting_alone_ = 0;
    bool alone_ = false;
};

}  // namespace kbench::orchestrator
