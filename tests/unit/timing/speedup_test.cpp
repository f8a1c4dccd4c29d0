#include "timing/speedup.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace kbench::timing {

TEST(Speedup, RatioOfMedians) {
    auto e = estimate_speedup({200, 210, 190}, {100, 105, 95}, Statistic::median, 500);
    EXPECT_DOUBLE_EQ(e.speedup, 2.0);
    EXPECT_LE(e.ci_lo, e.speedup);
    EXPECT_GE(e.ci_hi, e.speedup);
}

TEST(Speedup, RatioOfMeansInKernelBenchMode) {
    auto e = estimate_speedup({100, 300}, {100, 100}, Statistic::mean, 100);
    EXPECT_DOUBLE_EQ(e.speedup, 2.0);
}

TEST(Speedup, IntervalNarrowsWithMoreSamples) {
    std::mt19937 rng(3);
    std::normal_distribution<double> base(100, 5), cand(50, 2.5);
    std::vector<double> b10, c10, b1000, c1000;
    for (int i = 0; i < 10; ++i) b10.push_back(base(rng)), c10.push_back(cand(rng));
    for (int i = 0; i < 1000; ++i) b1000.push_back(base(rng)), c1000.push_back(cand(rng));
    auto few = estimate_speedup(b10, c10, Statistic::median);
    auto many = estimate_speedup(b1000, c1000, Statistic::median);
    EXPECT_LT(many.ci_hi - many.ci_lo, few.ci_hi - few.ci_lo);
    EXPECT_LT(many.ci_lo, 2.0);
    EXPECT_GT(many.ci_hi, 2.0);
}

TEST(Speedup, DeterministicForASeed) {
    std::vector<double> b{1, 2, 3, 4, 5, 6}, c{2, 3, 4, 5, 6, 7};
    auto x = estimate_speedup(b, c, Statistic::median, 300, 9);
    auto y = estimate_speedup(b, c, Statistic::median, 300, 9);
    EXPECT_EQ(x.ci_lo, y.ci_lo);
    EXPECT_EQ(x.ci_hi, y.ci_hi);
}

TEST(Speedup, RefusesEmptySamples) {
    EXPECT_THROW(estimate_speedup({}, {1.0}, Statistic::median), std::invalid_argument);
}

}  // namespace kbench::timing

TEST(SpeedupOverRounds, GeometricMeanWithAStudentInterval) {
    // Logs 0.1, -0.1, 0.3: mean 0.1, sd 0.2, t(2) = 4.303, half-width 4.303 * 0.2 / sqrt(3).
    auto e = kbench::timing::speedup_over_rounds({std::exp(0.1), std::exp(-0.1), std::exp(0.3)});
    double half = 4.303 * 0.2 / std::sqrt(3.0);
    EXPECT_NEAR(e.speedup, std::exp(0.1), 1e-12);
    EXPECT_NEAR(e.ci_lo, std::exp(0.1 - half), 1e-9);
    EXPECT_NEAR(e.ci_hi, std::exp(0.1 + half), 1e-9);
}

TEST(SpeedupOverRounds, EqualRoundsGiveAPointInterval) {
    auto e = kbench::timing::speedup_over_rounds({2.0, 2.0, 2.0, 2.0});
    EXPECT_DOUBLE_EQ(e.speedup, 2.0);
    EXPECT_NEAR(e.ci_lo, 2.0, 1e-12);
    EXPECT_NEAR(e.ci_hi, 2.0, 1e-12);
}

TEST(SpeedupOverRounds, TheSystematicPartWidensTheIntervalInQuadrature) {
    // Equal rounds: the interval is the systematic part alone, 1.96 standard deviations.
    auto e = kbench::timing::speedup_over_rounds({2.0, 2.0, 2.0, 2.0}, 0.003);
    double fixed = 1.96 * std::log(1.003);
    EXPECT_DOUBLE_EQ(e.speedup, 2.0);
    EXPECT_NEAR(e.ci_lo, 2.0 * std::exp(-fixed), 1e-5);
    EXPECT_NEAR(e.ci_hi, 2.0 * std::exp(fixed), 1e-5);
    // With a spread over rounds too: sqrt(t part squared + systematic part squared).
    auto w =
        kbench::timing::speedup_over_rounds({std::exp(0.1), std::exp(-0.1), std::exp(0.3)}, 0.01);
    double t_part = 4.303 * 0.2 / std::sqrt(3.0), s_part = 1.96 * std::log(1.01);
    double half = std::sqrt(t_part * t_part + s_part * s_part);
    EXPECT_NEAR(w.ci_lo, std::exp(0.1 - half), 1e-4);
    EXPECT_NEAR(w.ci_hi, std::exp(0.1 + half), 1e-4);
}

TEST(SpeedupOverRounds, RefusesFewerThanTwoRoundsAndNonPositiveRatios) {
    EXPECT_THROW(kbench::timing::speedup_over_rounds({1.0}), std::invalid_argument);
    EXPECT_THROW(kbench::timing::speedup_over_rounds({1.0, 0.0}), std::invalid_argument);
    EXPECT_THROW(kbench::timing::speedup_over_rounds({1.0, std::nan("")}), std::invalid_argument);
}

TEST(SpeedupOverRounds, TQuantiles) {
    EXPECT_NEAR(kbench::timing::t_975(1), 12.706, 1e-3);
    EXPECT_NEAR(kbench::timing::t_975(30), 2.042, 1e-3);
    EXPECT_NEAR(kbench::timing::t_975(40), 2.021, 1e-3);
    EXPECT_NEAR(kbench::timing::t_975(120), 1.980, 1e-3);
    EXPECT_NEAR(kbench::timing::t_975(100000), 1.960, 1e-3);
}
