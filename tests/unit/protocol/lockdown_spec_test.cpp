#include "protocol/lockdown_spec.hpp"

#include <gtest/gtest.h>

#include <set>

#include "confinement/cgroups.hpp"

namespace kbench::sandbox {

TEST(LayerTable, EachLayerOnceWithItsStageWhatItGivesAndItsCheck) {
    std::set<std::string_view> ids;
    for (const LayerInfo& l : layer_table()) {
        EXPECT_TRUE(ids.insert(l.id).second) << l.id;
        EXPECT_TRUE(l.stage == "start" || l.stage == "cgroup" || l.stage == "self") << l.id;
        EXPECT_FALSE(l.gives.empty()) << l.id;
        EXPECT_EQ(l.gives.find('|'), std::string_view::npos) << l.id << ": breaks the table";
        EXPECT_FALSE(l.checked.empty()) << l.id;
        EXPECT_EQ(l.checked.find('|'), std::string_view::npos) << l.id << ": breaks the table";
    }
    EXPECT_EQ(lockdown_layers().size(), layer_table().size());
    EXPECT_EQ(lockdown_layers().front(), "identity");
}

// The table's text names the limits the code applies.
TEST(LayerTable, NamesTheLimitsTheCodeApplies) {
    auto gives = [](std::string_view id) {
        for (const LayerInfo& l : layer_table())
            if (l.id == id) return std::string(l.gives);
        return std::string();
    };
    EXPECT_NE(gives("pids_limit").find("at most " + std::to_string(kMaxTasks) + " tasks"),
              std::string::npos);
    EXPECT_NE(gives("event_limits").find("at most " + std::to_string(kOpenFiles) + " open"),
              std::string::npos);
    EXPECT_NE(gives("disk_quota").find(std::to_string(kDiskFiles) + " files"), std::string::npos);
}

}  // namespace kbench::sandbox
