#include "orchestrator/devices/device_turns.hpp"

namespace kbench::orchestrator {

DeviceTurns::Turn DeviceTurns::shared() {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [&] { return !alone_ && waiting_alone_ == 0; });
    ++sharing_;
    return Turn(this, false);
}

DeviceTurns::Turn DeviceTurns::alone() {
    std::unique_lock<std::mutex> lock(mutex_);
    ++waiting_alone_;
    changed_.wait(lock, [&] { return !alone_ && sharing_ == 0; });
    --waiting_alone_;
    alone_ = true;
    return Turn(this, true);
}

void DeviceTurns::end(bool alone) {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        if (alone)
            alone_ = false;
        else
            --sharing_;
    }
    changed_.notify_all();
}

}  // namespace kbench::orchestrator
