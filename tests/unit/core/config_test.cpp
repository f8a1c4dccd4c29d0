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

void leaves(const json& j, const std::string& prefix, std::vector<std::string>& out) {
    if (j.is_object()) {
        for (const auto& [k, v] : j.items()) leaves(v, prefix + k + ".", out);
        return;
    }
    out.push_back(prefix.substr(0, prefix.size() - 1));
}

TEST(CheckConfig, EveryFieldIsInTheStoreKeyButTheDevicesOrdinal) {
    CheckConfig base;
    base.device = "cuda:0";
    const std::vector<std::pair<std::string, std::function<void(CheckConfig&)>>> changes = {
        {"mode", [](CheckConfig& c) { c.mode = Mode::kernelbench; }},
        {"precision", [](CheckConfig& c) { c.precision = Precision::bf16; }},
        {"tf32", [](CheckConfig& c) { c.tf32 = Tf32::on; }},
        {"trials", [](CheckConfig& c) { c.trials = 3; }},
        {"seed", [](CheckConfig& c) { c.seed = 7; }},
        {"device", [](CheckConfig& c) { c.device = "cpu"; }},
        {"tolerance", [](CheckConfig& c) { c.tolerance = 0.5; }},
        {"limits.build_s", [](CheckConfig& c) { c.limits.build_s = 1; }},
        {"limits.load_s", [](CheckConfig& c) { c.limits.load_s = 1; }},
        {"limits.correctness_s", [](CheckConfig& c) { c.limits.correctness_s = 8; }},
        {"limits.timing_s", [](CheckConfig& c) { c.limits.timing_s = 1; }},
        {"limits.call_factor", [](CheckConfig& c) { c.limits.call_factor = 7; }},
        {"timing.alternate", [](CheckConfig& c) { c.timing.alternate = false; }},
        {"timing.rounds_systematic", [](CheckConfig& c) { c.timing.rounds_systematic = 0.01; }},
        {"timing.stop_below", [](CheckConfig& c) { c.timing.stop_below = 0.5; }},
        {"limits.call_floor_s", [](CheckConfig& c) { c.limits.call_floor_s = 2; }},
        {"limits.first_call_s", [](CheckConfig& c) { c.limits.first_call_s = 9; }},
        {"timing.protocol", [](CheckConfig& c) { c.timing.protocol = Mode::kernelbench; }},
        {"timing.min_samples", [](CheckConfig& c) { c.timing.min_samples = 2; }},
        {"timing.max_samples", [](CheckConfig& c) { c.timing.max_samples = 2; }},
        {"timing.max_seconds", [](CheckConfig& c) { c.timing.max_seconds = 2; }},
        {"timing.target_rel_halfwidth", [](CheckConfig& c) { c.timing.target_rel_halfwidth = 2; }},
        {"timing.warmup_min", [](CheckConfig& c) { c.timing.warmup_min = 2; }},
        {"timing.warmup_max", [](CheckConfig& c) { c.timing.warmup_max = 2; }},
        {"timing.warmup_max_seconds", [](CheckConfig& c) { c.timing.warmup_max_seconds = 9; }},
        {"timing.warmup_tolerance", [](CheckConfig& c) { c.timing.warmup_tolerance = 9; }},
        {"timing.kb_warmup", [](CheckConfig& c) { c.timing.kb_warmup = 9; }},
        {"timing.kb_trials", [](CheckConfig& c) { c.timing.kb_trials = 9; }},
        {"timing.kb_discard_first", [](CheckConfig& c) { c.timing.kb_discard_first = 9; }},
        {"timing.kb_flush_bytes", [](CheckConfig& c) { c.timing.kb_flush_bytes = 9; }},
        {"measure", [](CheckConfig& c) { c.measure = false; }},
        {"policy", [](CheckConfig& c) { c.policy = "permissive"; }},
        {"allow", [](CheckConfig& c) { c.allow = {"streams"}; }},
        {"deny", [](CheckConfig& c) { c.deny = {"streams"}; }},
    };
    // The list covers every field the serialisation has (a new field needs a line here).
    std::vector<std::string> fields;
    leaves(base.to_json(), "", fields);
    std::vector<std::string> covered;
    for (const auto& [name, change] : changes) covered.push_back(name);
    std::sort(fields.begin(), fields.end());
    std::sort(covered.begin(), covered.end());
    EXPECT_EQ(fields, covered);

    for (const auto& [name, change] : changes) {
        CheckConfig changed = base;
        change(changed);
        EXPECT_NE(changed.store_key(), base.store_key()) << name;
        EXPECT_EQ(changed.differences(base), std::vector<std::string>{name}) << name;
        CheckConfig back = CheckConfig::from_json(changed.to_json());
        EXPECT_EQ(back.to_json(), changed.to_json()) << name;
    }
    CheckConfig other_gpu = base;
    other_gpu.device = "cuda:3";
    EXPECT_EQ(other_gpu.store_key(), base.store_key());
    // Written only when set, so that runs made before it keep their key.
    CheckConfig capped = base;
    capped.device_memory = 24 * kGiB;
    EXPECT_NE(capped.store_key(), base.store_key());
    EXPECT_EQ(capped.differences(base), std::vector<std::string>{"device_memory"});
    EXPECT_EQ(CheckConfig::from_json(capped.to_json()).device_memory, 24 * kGiB);
}

}  // namespace
}  // namespace kbench

namespace kbench {
namespace {

// A device's name to its kind: every name a judge is given, CPU judges of --cpu-judges included.
TEST(DeviceKind, EveryDeviceNameHasItsKind) {
    EXPECT_EQ(device_kind_of("cpu"), DeviceKind::cpu);
    EXPECT_EQ(device_kind_of("cpu:1"), DeviceKind::cpu);
    EXPECT_EQ(device_kind_of("cuda"), DeviceKind::cuda);
    EXPECT_EQ(device_kind_of("cuda:3"), DeviceKind::cuda);
    EXPECT_THROW(device_kind_of("tpu"), UsageError);
    CheckConfig c;
    c.device = "cpu:2";
    EXPECT_EQ(c.device_kind(), DeviceKind::cpu);
}

}  // namespace
}  // namespace kbench
