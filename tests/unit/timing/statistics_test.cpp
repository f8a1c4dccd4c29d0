#include "timing/statistics.hpp"

#include <gtest/gtest.h>

namespace kbench::timing {

TEST(Statistics, SummaryOfKnownSample) {
    Summary s = summarize({5, 1, 4, 2, 3});
    EXPECT_EQ(s.n, 5u);
    EXPECT_DOUBLE_EQ(s.median, 3);
    EXPECT_DOUBLE_EQ(s.mean, 3);
    EXPECT_DOUBLE_EQ(s.min, 1);
    EXPECT_DOUBLE_EQ(s.max, 5);
    EXPECT_DOUBLE_EQ(s.p10, 1.4);
    EXPECT_DOUBLE_EQ(s.p90, 4.6);
}

TEST(Statistics, MedianOfEvenCountInterpolates) {
    EXPECT_DOUBLE_EQ(median({4, 1, 3, 2}), 2.5);
}

TEST(Statistics, EmptySampleIsZero) {
    Summary s = summarize({});
    EXPECT_EQ(s.n, 0u);
    EXPECT_EQ(s.median, 0);
}

TEST(Statistics, MedianIntervalUsesBinomialRanks) {
    std::vector<double> sorted;
    for (int i = 1; i <= 100; ++i) sorted.push_back(i);
    Interval ci = median_ci95_sorted(sorted);
    // For n = 100 the distribution-free 95% interval is [x(40), x(61)].
    EXPECT_DOUBLE_EQ(ci.lo, 40);
    EXPECT_DOUBLE_EQ(ci.hi, 61);
}

TEST(Statistics, MedianIntervalOfTinySampleIsTheRange) {
    Interval ci = median_ci95_sorted({1, 2, 3, 4, 5, 6, 7, 8, 9, 10});
    EXPECT_DOUBLE_EQ(ci.lo, 1);
    EXPECT_DOUBLE_EQ(ci.hi, 10);
}

}  // namespace kbench::timing
