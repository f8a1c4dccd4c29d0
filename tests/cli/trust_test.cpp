// The trust boundary as a user meets it: every sandbox layer that is off is said once and
// recorded in each verdict, the worker package and the build cache are checked against what
// kbench made, and a tampered one is refused or rebuilt.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "confinement/lockdown.hpp"
#include "support/command.hpp"

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using kbench::test::quote;
using kbench::test::run_command;

const std::string kReference = std::string(KBENCH_FIXTURE_DIR) + "/references/relu_small.py";
const std::string kHonest = std::string(KBENCH_FIXTURE_DIR) + "/cpu/honest.py";

class Trust : public ::testing::Test {
  protected:
    void SetUp() override {
        dir_ = fs::temp_directory_path() /
               ("kbench-trust-" + std::to_string(::getpid()) + "-" +
                ::testing::UnitTest::GetInstance()->current_test_info()->name());
        fs::create_directories(dir_);
    }
    void TearDown() override { fs::remove_all(dir_); }

    std::string check(const std::string& env, const std::string& cache,
                      const std::string& candidate = kHonest) {
        return env + " " + quote(KBENCH_BINARY) +
               " check --device cpu --json --no-timing --policy permissive " + "--python " +
               quote(KBENCH_TEST_PYTHON) + " --cache-dir " + quote(cache) + " " +
               quote(kReference) + " " + quote(candidate);
    }

    fs::path dir_;
};

json first_verdict(const std::string& out) {
    std::istringstream lines(out);
    std::string line;
    std::getline(lines, line);
    return line.empty() ? json() : json::parse(line);
}

TEST_F(Trust, EachLayerForcedOffIsSaidOnceAndRecordedInTheVerdict) {
    for (const std::string& layer : kbench::sandbox::lockdown_layers()) {
        auto r = run_command(check("KBENCH_SANDBOX_DISABLE=" + layer, KBENCH_TEST_CACHE));
        json v = first_verdict(r.out);
        ASSERT_TRUE(v.is_object()) << layer << ": " << r.err;
        EXPECT_EQ(v["status"], "correct") << layer << ": " << v.dump(2);
        const json& missing = v["config"]["sandbox"]["missing"];
        ASSERT_TRUE(missing.contains(layer)) << layer << ": " << v["config"].dump(2);
        EXPECT_NE(missing[layer].get<std::string>().find("forced off: KBENCH_SANDBOX_DISABLE"),
                  std::string::npos)
            << missing[layer];
        std::string said = "sandbox layer " + layer + " is off: forced off";
        auto at = r.err.find(said);
        EXPECT_NE(at, std::string::npos) << layer << ": " << r.err;
        EXPECT_EQ(r.err.find(said, at + 1), std::string::npos) << "said more than once";
    }
}

// KBENCH_TEST_REQUIRE_LAYERS (CI sets it: .ci/run): the layers this kind of machine is known to
// provide, comma-separated, or "all". A missing one fails here rather than letting the tests that
// need it skip.
TEST_F(Trust, EveryLayerTheMachineIsKnownToProvideIsApplied) {
    const char* list = std::getenv("KBENCH_TEST_REQUIRE_LAYERS");
    if (!list || !*list) GTEST_SKIP() << "KBENCH_TEST_REQUIRE_LAYERS names no layer to require";
    std::vector<std::string> required;
    std::stringstream names(list);
    for (std::string name; std::getline(names, name, ',');)
        if (!name.empty()) required.push_back(name);
    if (required == std::vector<std::string>{"all"}) required = kbench::sandbox::lockdown_layers();
    auto r = run_command(check("", KBENCH_TEST_CACHE));
    json v = first_verdict(r.out);
    ASSERT_TRUE(v.is_object()) << r.err;
    const json& sandbox = v["config"]["sandbox"];
    for (const std::string& layer : required) {
        const auto& layers = kbench::sandbox::lockdown_layers();
        ASSERT_NE(std::find(layers.begin(), layers.end(), layer), layers.end())
            << "KBENCH_TEST_REQUIRE_LAYERS names " << layer << ", which is no layer";
        EXPECT_FALSE(sandbox["missing"].contains(layer))
            << layer << " is required but missing: " << sandbox["missing"][layer].dump();
    }
}

TEST_F(Trust, AnUnknownLayerIsAUsageError) {
    auto r = run_command(check("KBENCH_SANDBOX_DISABLE=firewall", KBENCH_TEST_CACHE));
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("'firewall', which is no layer"), std::string::npos) << r.err;
}

// A copy of the worker package that KBENCH_WORKER_PATH points at, changed after the build.
TEST_F(Trust, AChangedWorkerPackageIsRefusedBeforeAnyWorkerStarts) {
    fs::path package = fs::path(KBENCH_BINARY).parent_path() / "python";
    fs::path copy = dir_ / "python";
    fs::copy(package, copy, fs::copy_options::recursive);
    fs::remove_all(copy / "kbench_worker" / "__pycache__");
    std::string env = "KBENCH_WORKER_PATH=" + quote(copy.string());
    auto untouched = run_command(check(env, KBENCH_TEST_CACHE));
    EXPECT_EQ(untouched.exit_code, 0) << untouched.err;

    std::ofstream(copy / "kbench_worker" / "__init__.py", std::ios::app) << "\nimport os\n";
    auto changed = run_command(check(env, KBENCH_TEST_CACHE));
    EXPECT_EQ(changed.exit_code, 2);
    EXPECT_NE(changed.err.find("is not the file kbench built"), std::string::npos) << changed.err;

    fs::copy_file(package / "kbench_worker" / "__init__.py", copy / "kbench_worker" / "__init__.py",
                  fs::copy_options::overwrite_existing);
    std::ofstream(copy / "torch.py") << "raise SystemExit\n";
    auto added = run_command(check(env, KBENCH_TEST_CACHE));
    EXPECT_EQ(added.exit_code, 2);
    EXPECT_NE(added.err.find("holds a file kbench did not build"), std::string::npos) << added.err;
}

// A build whose artefact changed in the cache is not used: it is built again, and said so.
TEST_F(Trust, AChangedBuildIsBuiltAgain) {
    std::string cache = (dir_ / "cache").string();
    auto first = run_command(check("", cache));
    ASSERT_EQ(first.exit_code, 0) << first.err;
    int changed = 0;
    for (const auto& entry : fs::recursive_directory_iterator(cache))
        if (entry.path().extension() == ".so") {
            std::ofstream(entry.path(), std::ios::binary | std::ios::trunc) << "garbage";
            ++changed;
        }
    ASSERT_GT(changed, 0) << "no built extension in " << cache;
    auto second = run_command(check("", cache) + " -v");
    EXPECT_EQ(second.exit_code, 0) << second.err;
    EXPECT_EQ(first_verdict(second.out)["status"], "correct");
    EXPECT_NE(second.err.find("failed its check"), std::string::npos) << second.err;
    EXPECT_NE(second.err.find("building it again"), std::string::npos) << second.err;
}

// Without the layers that keep them out of reach, a candidate can signal kbench's judge and
// zygote: each records who sent what, and the candidate's verdict says so.
TEST_F(Trust, SignalsFromACandidateToKbenchAreItsAttack) {
    std::string candidate = (dir_ / "signals.py").string();
    std::ofstream(candidate) << R"PY(import os
import signal
import torch
import torch.nn as nn


def targets():
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = open(f"/proc/{entry}/cmdline", "rb").read()
        except OSError:
            continue
        if b"kbench_worker" in cmdline and (b"judge" in cmdline or b"zygote" in cmdline):
            found.append(int(entry))
    return found


class ModelNew(nn.Module):
    def forward(self, x):
        for pid in targets():
            if pid != os.getpid():
                try:
                    os.kill(pid, signal.SIGUSR1)
                except OSError:
                    pass
        return torch.relu(x)
)PY";
    auto r = run_command(check("KBENCH_SANDBOX_DISABLE=pid_namespace,landlock,identity",
                               KBENCH_TEST_CACHE, candidate));
    json v = first_verdict(r.out);
    ASSERT_TRUE(v.is_object()) << r.err;
    EXPECT_EQ(v["status"], "rejected") << v.dump(2);
    EXPECT_NE(v.dump().find("signalled_kbench"), std::string::npos) << v.dump(2);
    EXPECT_NE(v.dump().find("SIGUSR1"), std::string::npos) << v.dump(2);
}

// Rounds: the baseline's requests go to a sandbox of the reference's own, alternating with the
// candidate's; a candidate that is the reference itself gets a speedup about 1 over at least five
// rounds, and the baseline comes from the same rounds (as many requests of each side).
TEST_F(Trust, RoundsTimeTheBaselineInASandboxOfItsOwn) {
    std::string candidate = (dir_ / "identity.py").string();
    {
        std::ifstream in(kReference);
        std::ofstream out(candidate);
        out << in.rdbuf() << "\n\nclass ModelNew(Model):\n    pass\n";
    }
    std::string command = quote(KBENCH_BINARY) +
                          " check --device cpu --json --policy permissive --rounds "
                          "--max-seconds 2 --python " +
                          quote(KBENCH_TEST_PYTHON) + " --cache-dir " + quote(KBENCH_TEST_CACHE) +
                          " " + quote(kReference) + " " + quote(candidate);
    auto r = run_command(command);
    json v = first_verdict(r.out);
    ASSERT_TRUE(v.is_object()) << r.err;
    ASSERT_EQ(v["status"], "correct") << v.dump(2);
    EXPECT_GE(v["speedup_rounds"].get<int>(), 5) << v.dump(2);
    double speedup = v["speedup"].get<double>();
    EXPECT_GT(speedup, 0.5);
    EXPECT_LT(speedup, 2.0);
    EXPECT_GT(v["baseline"]["n"].get<int>(), 0) << v["baseline"].dump();
}

}  // namespace
