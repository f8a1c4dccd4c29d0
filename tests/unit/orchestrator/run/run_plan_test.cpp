// The command layer's pure parts: resume planning, the configuration's one serialisation and
// store key, the store's version and attempts, KernelBench's result names and its view.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <fstream>
#include <functional>
#include <regex>
#include <sstream>

#include "core/config.hpp"
#include "core/error.hpp"
#include "core/files.hpp"
#include "core/memory_plan.hpp"
#include "orchestrator/run/run_plan.hpp"
#include "report/kernelbench_results.hpp"
#include "report/progress.hpp"
#include "report/reporter.hpp"
#include "score/kernelbench_view.hpp"
#include "store/run_lock.hpp"
#include "store/verdict_store.hpp"

namespace kbench {
namespace {

using orchestrator::ItemRecord;

TEST(RunPlan, StoredVerdictsAreDoneHarnessFailuresAndAbnormalEndsAreRedone) {
    std::vector<ItemRecord> records = {
        {std::nullopt, 0},   // 0: new
        {"correct", 0},      // 1: done
        {"infra_error", 0},  // 2: kbench's own failure: again
        {std::nullopt, 1},   // 3: one abnormal end: alone, first
        {std::nullopt, 2},   // 4: two: condemned
        {"incorrect", 3},    // 5: a verdict ends the attempts
        {"infra_error", 2},  // 6: a stored infra_error ends them too
    };
    auto plan = orchestrator::plan_run(records, false);
    EXPECT_EQ(plan.done, (std::vector<std::size_t>{1, 5}));
    EXPECT_EQ(plan.rest, (std::vector<std::size_t>{0, 2, 6}));
    EXPECT_EQ(plan.suspects, (std::vector<std::size_t>{3}));
    ASSERT_EQ(plan.condemned.size(), 1u);
    EXPECT_EQ(plan.condemned[0], (std::pair<std::size_t, int>{4, 2}));
    EXPECT_EQ(plan.to_do(), 5u);

    auto forced = orchestrator::plan_run(records, true);
    EXPECT_TRUE(forced.done.empty());
    EXPECT_TRUE(forced.suspects.empty());
    EXPECT_TRUE(forced.condemned.empty());
    EXPECT_EQ(forced.rest.size(), records.size());
    Decision crash = orchestrator::condemned(2, true);
    EXPECT_EQ(crash.status, Status::crash);
    EXPECT_EQ(crash.blame, Blame::candidate);
    EXPECT_NE(crash.reason.find("stopped 2 times"), std::string::npos);
    EXPECT_NE(crash.reason.find("--force"), std::string::npos);
    // refine has no --force, and does not run a suspect alone: its reason says neither.
    EXPECT_EQ(orchestrator::condemned(2, false).reason.find("alone"), std::string::npos);
    EXPECT_EQ(orchestrator::condemned(2, false).reason.find("--force"), std::string::npos);
}

// Every leaf of the configuration's JSON, by dotted name.

}  // namespace
}  // namespace kbench
