#include <gtest/gtest.h>

#include <random>

#include "timing/fixed_count_criterion.hpp"
#include "timing/median_ci_criterion.hpp"
#include "timing/steady_warmup.hpp"

namespace kbench::timing {

TEST(FixedCountCriterion, CountsDiscardedSamplesToo) {
    FixedCountCriterion c(100, 1);
    EXPECT_EQ(c.discard_first(), 1u);
    int taken = 0;
    while (!c.is_finished(0)) c.add_sample(1.0), ++taken;
    EXPECT_EQ(taken, 101);
}

}  // namespace kbench::timing
