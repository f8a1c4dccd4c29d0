#include "integrity/rules.hpp"

#include <gtest/gtest.h>

#include "core/error.hpp"

namespace kbench::integrity {
namespace {

std::string usage_error(const std::vector<std::string>& allow,
                        const std::vector<std::string>& deny) {
    try {
        RulePolicy::make("strict", allow, deny);
    } catch (const UsageError& e) {
        return e.what();
    }
    return "";
}

TEST(RulePolicy, EveryRuleHasOneKindAndASeverityUnderEachPolicy) {
    for (const Rule& r : all_rules()) {
        EXPECT_TRUE(r.kind == "static" || r.kind == "runtime" || r.kind == "judge" ||
                    r.kind == "record")
            << r.id;
        if (r.kind == "judge") {
            EXPECT_EQ(r.permissive, Severity::reject) << r.id;
        }
        if (r.kind == "record") {
            EXPECT_EQ(r.strict, Severity::warn) << r.id;
        }
        EXPECT_FALSE(r.finds.empty()) << r.id;
    }
}

TEST(RulePolicy, DenyAndAllowChangeWhatTheyMayAndSayWhyNotElsewhere) {
    RulePolicy p = RulePolicy::make("kernelbench", {"below_floor"}, {"threads_started"});
    EXPECT_EQ(p.severity("below_floor"), Severity::warn);
    EXPECT_EQ(p.severity("threads_started"), Severity::reject);
    EXPECT_EQ(p.severity("work_beside_baseline"), Severity::warn);
    EXPECT_EQ(RulePolicy::make("strict", {}, {}).severity("work_beside_baseline"),
              Severity::reject);
    // The judge stops the request on a breach: no policy lifts it.
    EXPECT_NE(usage_error({"output_written_after_reply"}, {}).find("the judge stops the request"),
              std::string::npos);
    EXPECT_EQ(usage_error({}, {"signalled_kbench"}), "");
    // A record of what happened to the evaluation is no rule to change.
    EXPECT_NE(usage_error({}, {"worker_died"}).find("records what happened"), std::string::npos);
    EXPECT_NE(usage_error({"timing_core_left"}, {}).find("records what happened"),
              std::string::npos);
    EXPECT_NE(usage_error({"no_such_rule"}, {}).find("unknown rule"), std::string::npos);
    // A rule the table lacks rejects: never a free pass.
    EXPECT_EQ(RulePolicy::make("permissive", {}, {}).severity("no_such_rule"), Severity::reject);
}

}  // namespace
}  // namespace kbench::integrity
