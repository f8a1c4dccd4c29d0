#include <gtest/gtest.h>

#include <random>

#include "timing/fixed_count_criterion.hpp"
#include "timing/median_ci_criterion.hpp"
#include "timing/steady_warmup.hpp"

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

}  // namespace kbench::timing
