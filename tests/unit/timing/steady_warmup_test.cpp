#include <gtest/gtest.h>

#include <random>

#include "timing/fixed_count_criterion.hpp"
#include "timing/median_ci_criterion.hpp"
#include "timing/steady_warmup.hpp"

namespace kbench::timing {

TEST(SteadyWarmup, StopsOnceThreeCallsAgree) {
    SteadyWarmup w(3, 100, 10.0, 0.05);
    for (double v : {5000.0, 900.0, 120.0, 101.0}) {
        w.add_call(v);
        EXPECT_FALSE(w.is_finished(0.0));
    }
    w.add_call(100.0);
    EXPECT_FALSE(w.is_finished(0.0));  // 120, 101, 100 still spread 20%
    w.add_call(102.0);
    EXPECT_TRUE(w.is_finished(0.0));
    EXPECT_TRUE(w.steady());
}

TEST(SteadyWarmup, CapsCallsAndTime) {
    SteadyWarmup calls(3, 5, 10.0, 0.0);
    for (int i = 0; i < 5; ++i) calls.add_call(i % 2 ? 1.0 : 2.0);
    EXPECT_TRUE(calls.is_finished(0.0));
    SteadyWarmup time(3, 100, 1.0, 0.0);
    for (int i = 0; i < 3; ++i) time.add_call(i + 1.0);
    EXPECT_FALSE(time.is_finished(0.5));
    EXPECT_TRUE(time.is_finished(2.0));
}

TEST(SteadyWarmup, HonoursMinimumCalls) {
    SteadyWarmup w(3, 100, 0.0, 1.0);
    w.add_call(1.0);
    EXPECT_FALSE(w.is_finished(99.0));
}

}  // namespace kbench::timing
