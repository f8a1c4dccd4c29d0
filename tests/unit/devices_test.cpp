#include <gtest/gtest.h>

#include "core/error.hpp"
#include "schedule/devices.hpp"

namespace {

using kbench::schedule::split_cores;

TEST(SplitCores, DealsContiguousSharesThatDifferByOneAtMost) {
    auto shares = split_cores({0, 1, 2, 3, 4, 5, 6}, 3);
    ASSERT_EQ(shares.size(), 3u);
    EXPECT_EQ(shares[0], (std::vector<int>{0, 1, 2}));
    EXPECT_EQ(shares[1], (std::vector<int>{3, 4}));
    EXPECT_EQ(shares[2], (std::vector<int>{5, 6}));
}

TEST(SplitCores, KeepsTheCoresTheProcessWasGiven) {
    auto shares = split_cores({2, 3, 8, 9}, 2);
    EXPECT_EQ(shares[0], (std::vector<int>{2, 3}));
    EXPECT_EQ(shares[1], (std::vector<int>{8, 9}));
}

TEST(SplitCores, MoreJudgesThanCoresIsAUsageErrorThatSaysHowMany) {
    try {
        split_cores({0, 1}, 3);
        FAIL() << "no error";
    } catch (const kbench::UsageError& e) {
        EXPECT_NE(std::string(e.what()).find("may use 2"), std::string::npos) << e.what();
    }
}

TEST(UsableCores, ListsAtLeastTheCoreThisRunsOn) {
    EXPECT_FALSE(kbench::schedule::usable_cores().empty());
}

}  // namespace
