#include "judge/phase_clock.hpp"

#include <gtest/gtest.h>

namespace kbench::worker {
namespace {

using Clock = PhaseClock::Clock;
using std::chrono::seconds;

TEST(PhaseClock, WithoutALimitNothingRunsOut) {
    PhaseClock clock;
    auto t = Clock::now();
    clock.stop(t);
    EXPECT_TRUE(clock.running());
    EXPECT_EQ(clock.deadline(t + seconds(1000)), Clock::time_point::max());
    clock.run(t + seconds(5));
    EXPECT_EQ(clock.deadline(), Clock::time_point::max());
}

TEST(PhaseClock, StartsStoppedAndCountsOnlyWhileItRuns) {
    PhaseClock clock;
    auto t = Clock::now();
    clock.start(10, t);
    EXPECT_FALSE(clock.running());
    // Stopped: however long the judge works, the sandbox still has its 10 s.
    EXPECT_EQ(clock.deadline(t + seconds(100)), t + seconds(110));
    clock.run(t + seconds(100));  // the first request
    EXPECT_TRUE(clock.running());
    EXPECT_EQ(clock.deadline(t + seconds(103)), t + seconds(110));
    clock.stop(t + seconds(103));  // a reply after 3 s of the sandbox's
    clock.run(t + seconds(200));   // the judge's own work: 97 s
    EXPECT_EQ(clock.deadline(), t + seconds(207));
    clock.stop(t + seconds(204));
    clock.run(t + seconds(300));
    EXPECT_EQ(clock.deadline(), t + seconds(303));  // 3 + 4 s used, 3 s left
}

TEST(PhaseClock, RunAndStopTwiceChangeNothing) {
    PhaseClock clock;
    auto t = Clock::now();
    clock.start(10, t);
    clock.run(t + seconds(1));
    clock.run(t + seconds(5));  // already running: from 1 s on
    EXPECT_EQ(clock.deadline(), t + seconds(11));
    clock.stop(t + seconds(6));
    clock.stop(t + seconds(9));  // already stopped at 6 s
    clock.run(t + seconds(20));
    EXPECT_EQ(clock.deadline(), t + seconds(25));
}

TEST(PhaseClock, AStartBeginsANewPhase) {
    PhaseClock clock;
    auto t = Clock::now();
    clock.start(10, t);
    clock.run(t);
    clock.stop(t + seconds(9));
    clock.start(2, t + seconds(50));
    clock.run(t + seconds(60));
    EXPECT_EQ(clock.deadline(), t + seconds(62));
}

TEST(PhaseClock, ChargedSecondsComeOffWhatIsLeft) {
    PhaseClock clock;
    auto t = Clock::now();
    clock.charge(3);  // no limit: nothing to take from
    EXPECT_EQ(clock.deadline(t), Clock::time_point::max());
    clock.start(10, t);
    clock.run(t + seconds(100));
    clock.stop(t + seconds(102));
    clock.run(t + seconds(200));
    clock.charge(5);  // CPU its processes used while it stood still
    EXPECT_EQ(clock.deadline(), t + seconds(203));
}

}  // namespace
}  // namespace kbench::worker
