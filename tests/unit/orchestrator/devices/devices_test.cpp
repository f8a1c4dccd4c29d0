#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <memory>

#include "core/error.hpp"
#include "core/files.hpp"
#include "orchestrator/devices/devices.hpp"

namespace {

using kbench::orchestrator::gpu_capabilities;
using kbench::orchestrator::split_cores;

// A stand-in for the driver probe: a Python file with the given body.
kbench::fs::path probe_script(const std::string& body) {
    kbench::fs::path dir = kbench::make_temp_dir("kbench-test-probe-");
    kbench::write_file_atomic(dir / "probe.py", body);
    return dir / "probe.py";
}

TEST(GpuCapabilities, OneALineForEachGpuAndTheListReachesTheProbe) {
    // The probe echoes the list it was given, so a wrong argument would show.
    auto probe = probe_script(
        "import sys\nassert sys.argv[1] == '3,GPU-ab', sys.argv\nprint('9.0')\nprint('8.6')\n");
    std::string why;
    auto out = gpu_capabilities(KBENCH_TEST_PYTHON, probe, {"3", "GPU-ab"}, why);
    EXPECT_EQ(out, (std::vector<std::string>{"9.0", "8.6"})) << why;
    kbench::fs::remove_all(probe.parent_path());
}

TEST(GpuCapabilities, TheProbesFailureIsNoAnswerWithItsReason) {
    auto probe =
        probe_script("import sys\nprint('no CUDA driver: nope', file=sys.stderr)\nsys.exit(1)\n");
    std::string why;
    EXPECT_TRUE(gpu_capabilities(KBENCH_TEST_PYTHON, probe, {"0"}, why).empty());
    EXPECT_EQ(why, "no CUDA driver: nope");
    kbench::fs::remove_all(probe.parent_path());
}

TEST(GpuCapabilities, AnAnswerForAnotherNumberOfGpusIsNoAnswer) {
    auto probe = probe_script("print('9.0')\n");
    std::string why;
    EXPECT_TRUE(gpu_capabilities(KBENCH_TEST_PYTHON, probe, {"0", "1"}, why).empty());
    EXPECT_NE(why.find("1 capabilities for 2 GPU(s)"), std::string::npos) << why;
    kbench::fs::remove_all(probe.parent_path());
}

// The real probe: on a machine with a GPU it names what nvidia-smi names; elsewhere it says why
// it cannot.
TEST(GpuCapabilities, TheDriverProbeAgreesWithNvidiaSmi) {
    kbench::fs::path probe =
        kbench::fs::path(KBENCH_TEST_WORKER_PATH) / "kbench_worker" / "gpu_probe.py";
    // nvidia-smi numbers GPUs in PCI order; CUDA, unless told so, fastest first.
    ::setenv("CUDA_DEVICE_ORDER", "PCI_BUS_ID", 1);
    std::string why;
    auto out = gpu_capabilities(KBENCH_TEST_PYTHON, probe, {"0"}, why);
    if (kbench::orchestrator::count_gpus() == 0) {
        EXPECT_TRUE(out.empty());
        EXPECT_FALSE(why.empty());
        GTEST_SKIP() << "no GPU here; the probe said: " << why;
    }
    ASSERT_EQ(out.size(), 1u) << why;
    std::unique_ptr<FILE, int (*)(FILE*)> smi(
        ::popen("nvidia-smi --query-gpu=compute_cap --format=csv,noheader -i 0", "r"), ::pclose);
    ASSERT_TRUE(smi);
    char line[64] = {};
    ASSERT_TRUE(std::fgets(line, sizeof(line), smi.get()));
    std::string expected(line);
    while (!expected.empty() && (expected.back() == '\n' || expected.back() == ' '))
        expected.pop_back();
    EXPECT_EQ(out[0], expected);
}

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

TEST(TimingCores, EachGpuGetsACoreFromTheEndThatBuildersLeaveAlone) {
    std::vector<int> sixteen;
    for (int c = 0; c < 16; ++c) sixteen.push_back(c);
    auto one = kbench::orchestrator::timing_cores(sixteen, 1);
    EXPECT_EQ(one.timing, std::vector<int>{15});
    EXPECT_EQ(one.builders.size(), 15u);
    EXPECT_EQ(one.builders.back(), 14);
    auto two = kbench::orchestrator::timing_cores(sixteen, 2);
    EXPECT_EQ(two.timing, (std::vector<int>{15, 14}));
    EXPECT_EQ(two.builders.size(), 14u);
    // The cores this process was given, whatever their numbers.
    auto given = kbench::orchestrator::timing_cores({4, 5, 8, 9}, 1);
    EXPECT_EQ(given.timing, std::vector<int>{9});
    EXPECT_EQ(given.builders, (std::vector<int>{4, 5, 8}));
    // Too few to spare one: nothing is pinned and builders take every core.
    auto few = kbench::orchestrator::timing_cores({0, 1, 2}, 1);
    EXPECT_TRUE(few.timing.empty());
    EXPECT_TRUE(few.builders.empty());
    EXPECT_TRUE(kbench::orchestrator::timing_cores({0, 1, 2, 3, 4}, 2).timing.empty());
}

TEST(UsableCores, ListsAtLeastTheCoreThisRunsOn) {
    EXPECT_FALSE(kbench::orchestrator::usable_cores().empty());
}

}  // namespace
