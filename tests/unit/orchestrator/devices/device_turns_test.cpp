#include "orchestrator/devices/device_turns.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace kbench::orchestrator {
namespace {

using namespace std::chrono_literals;

TEST(DeviceTurns, SharedTurnsRunTogether) {
    DeviceTurns turns;
    auto a = turns.shared();
    std::atomic<bool> second{false};
    std::thread t([&] {
        auto b = turns.shared();
        second = true;
    });
    t.join();  // would hang if a shared turn excluded another
    EXPECT_TRUE(second);
}

TEST(DeviceTurns, TimingWaitsForSharedWorkAndExcludesIt) {
    DeviceTurns turns;
    std::atomic<int> inside{0};
    std::atomic<bool> overlap{false};
    auto shared = std::make_unique<DeviceTurns::Turn>(turns.shared());
    std::atomic<bool> timed{false};
    std::thread timer([&] {
        auto t = turns.alone();
        timed = true;
        if (inside.load() != 0) overlap = true;
        std::this_thread::sleep_for(20ms);
        if (inside.load() != 0) overlap = true;
    });
    std::this_thread::sleep_for(50ms);
    EXPECT_FALSE(timed) << "timing began while another judge's shared turn held the device";
    // The timer waits now: a new shared turn waits for it rather than starving it.
    std::atomic<bool> late{false};
    std::thread latecomer([&] {
        auto s = turns.shared();
        ++inside;
        late = true;
        if (!timed) overlap = true;
        --inside;
    });
    std::this_thread::sleep_for(50ms);
    EXPECT_FALSE(late) << "a shared turn began while a judge waited to time";
    shared.reset();
    timer.join();
    latecomer.join();
    EXPECT_TRUE(timed);
    EXPECT_TRUE(late);
    EXPECT_FALSE(overlap);
}

TEST(DeviceTurns, NoTurnsGrantsAtOnce) {
    auto a = DeviceTurns::alone(nullptr);
    auto b = DeviceTurns::alone(nullptr);
    SUCCEED();
}

}  // namespace
}  // namespace kbench::orchestrator
