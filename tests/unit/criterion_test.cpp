#include <gtest/gtest.h>

#include <random>

#include "worker/timing/fixed_count_criterion.hpp"
#include "worker/timing/median_ci_criterion.hpp"
#include "worker/timing/steady_warmup.hpp"

namespace kbench::timing {

TEST(MedianCiCriterion, NeverStopsBeforeMinimumSamples) {
    MedianCiCriterion c(10, 2000, 10.0, 0.01);
    for (int i = 0; i < 9; ++i) {
        c.add_sample(100.0);
        EXPECT_FALSE(c.is_finished(100.0)) << "after " << i + 1 << " samples";
    }
    c.add_sample(100.0);
    EXPECT_TRUE(c.is_finished(0.0));
    EXPECT_TRUE(c.converged());
}

TEST(MedianCiCriterion, StableSamplesConvergeNoisyOnesHitTheCap) {
    std::mt19937 rng(7);
    std::normal_distribution<double> tight(100.0, 0.2), wide(100.0, 40.0);
    MedianCiCriterion stable(10, 2000, 10.0, 0.01), noisy(10, 50, 10.0, 0.01);
    int n = 0;
    while (!stable.is_finished(0.0)) stable.add_sample(tight(rng)), ++n;
    EXPECT_TRUE(stable.converged());
    EXPECT_LT(n, 20);
    n = 0;
    while (!noisy.is_finished(0.0)) noisy.add_sample(std::abs(wide(rng))), ++n;
    EXPECT_EQ(n, 50);
    EXPECT_FALSE(noisy.converged());
}

TEST(MedianCiCriterion, TimeCapStopsWithoutConverging) {
    MedianCiCriterion c(10, 2000, 1.0, 0.01);
    for (int i = 0; i < 10; ++i) c.add_sample(i % 2 ? 10.0 : 1000.0);
    EXPECT_FALSE(c.is_finished(0.5));
    EXPECT_TRUE(c.is_finished(1.5));
    EXPECT_FALSE(c.converged());
}

TEST(MedianCiCriterion, RelativeHalfWidth) {
    MedianCiCriterion c(1, 100, 1.0, 0.01);
    for (double v : {98.0, 99.0, 100.0, 101.0, 102.0}) c.add_sample(v);
    // n = 5: the interval is the whole range [98, 102]; half of 4 over 100.
    EXPECT_NEAR(c.relative_halfwidth(), 0.02, 1e-12);
}

TEST(FixedCountCriterion, CountsDiscardedSamplesToo) {
    FixedCountCriterion c(100, 1);
    EXPECT_EQ(c.discard_first(), 1u);
    int taken = 0;
    while (!c.is_finished(0)) c.add_sample(1.0), ++taken;
    EXPECT_EQ(taken, 101);
}

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
