// The command line as a user meets it: exit codes, messages, output formats, paths.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "support/command.hpp"

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using kbench::test::quote;
using kbench::test::run_command;

const std::string kReference = std::string(KBENCH_FIXTURE_DIR) + "/references/relu_small.py";

class Cli : public ::testing::Test {
  protected:
    void SetUp() override {
        dir_ = fs::temp_directory_path() /
               ("kbench-cli-" + std::to_string(::getpid()) + "-" +
                ::testing::UnitTest::GetInstance()->current_test_info()->name());
        fs::create_directories(dir_);
    }
    void TearDown() override { fs::remove_all(dir_); }

    static std::string read(const std::string& path) {
        std::ifstream in(path);
        std::stringstream text;
        text << in.rdbuf();
        return text.str();
    }

    std::string write(const std::string& name, const std::string& text) {
        fs::path path = dir_ / name;
        std::ofstream(path) << text;
        return path.string();
    }

    std::string kbench(const std::string& args) {
        return quote(KBENCH_BINARY) + " check --policy permissive --python " +
               quote(KBENCH_TEST_PYTHON) + " " + args;
    }

    fs::path dir_;
};

const char* kPureRelu = R"(import torch
import torch.nn as nn
class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
)";

const char* kPureWrong = R"(import torch
import torch.nn as nn
class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x) * 2
)";

using kbench::test::json_lines;

TEST_F(Cli, MissingFileIsAUsageError) {
    auto r = run_command(kbench(quote(kReference) + " /nonexistent/candidate.py"));
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("/nonexistent/candidate.py"), std::string::npos) << r.err;
}

TEST_F(Cli, UnknownDeviceSaysWhatToUse) {
    std::string cand = write("c.py", kPureRelu);
    auto r = run_command(kbench(quote(kReference) + " " + quote(cand) + " --device gpu7"));
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("unknown device 'gpu7'"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("use cpu, cuda or cuda:N"), std::string::npos) << r.err;
}

TEST_F(Cli, GpuBackendOnCpuIsRefused) {
    std::string cand = write("c.py", kPureRelu);
    auto r =
        run_command(kbench(quote(kReference) + " " + quote(cand) + " --device cpu --backend cuda"));
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("needs a GPU"), std::string::npos) << r.err;
}

TEST_F(Cli, MissingPythonIsAnErrorThatNamesIt) {
    std::string cand = write("c.py", kPureRelu);
    auto r =
        run_command(quote(KBENCH_BINARY) + " check --device cpu --python /nonexistent/python3 " +
                    quote(kReference) + " " + quote(cand));
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("/nonexistent/python3"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("what to do"), std::string::npos) << r.err;
}

TEST_F(Cli, PythonComesFromTheEnvironmentToo) {
    std::string cand = write("c.py", kPureRelu);
    auto r = run_command("KBENCH_PYTHON=/nonexistent/envpython " + quote(KBENCH_BINARY) +
                         " check --device cpu " + quote(kReference) + " " + quote(cand));
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("/nonexistent/envpython"), std::string::npos) << r.err;
}

TEST_F(Cli, ExitCodeAndJsonLinesFollowTheVerdicts) {
    std::string good = write("good.py", kPureRelu), bad = write("bad.py", kPureWrong);
    auto ok = run_command(
        kbench("--device cpu --json --no-timing -q " + quote(kReference) + " " + quote(good)));
    EXPECT_EQ(ok.exit_code, 0) << ok.err;
    auto both = run_command(kbench("--device cpu --json --no-timing -q " + quote(kReference) + " " +
                                   quote(good) + " " + quote(bad)));
    EXPECT_EQ(both.exit_code, 1) << both.err;
    auto verdicts = json_lines(both.out);
    ASSERT_EQ(verdicts.size(), 2u) << both.out;
    EXPECT_EQ(verdicts[0]["status"], "correct");
    EXPECT_EQ(verdicts[1]["status"], "incorrect");
    EXPECT_EQ(verdicts[1]["candidate"]["path"], bad);
    EXPECT_EQ(verdicts[1]["problem"]["name"], "relu_small");
    EXPECT_EQ(verdicts[1]["config"]["device"], "cpu");
}

TEST_F(Cli, DatasetAuditFlagsAReferenceThatMissesItsOwnFloat64Result) {
    fs::create_directories(dir_ / "tree" / "level1");
    fs::copy_file(std::string(KBENCH_FIXTURE_DIR) + "/references/loose_cumsum.py",
                  dir_ / "tree" / "level1" / "1_LooseCumsum.py");
    fs::copy_file(kReference, dir_ / "tree" / "level1" / "2_ReLU.py");
    auto r =
        run_command(quote(KBENCH_BINARY) + " dataset audit --python " + quote(KBENCH_TEST_PYTHON) +
                    " --device cpu --json --dataset " + quote((dir_ / "tree").string()));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    auto rows = json_lines(r.out);
    ASSERT_EQ(rows.size(), 2u) << r.out << r.err;
    EXPECT_EQ(rows[0]["name"], "1_LooseCumsum");
    EXPECT_EQ(rows[0]["verdict"], "ill_conditioned");
    EXPECT_EQ(rows[0]["arbiter"], "float64");
    EXPECT_GT(rows[0]["max_abs_diff"].get<double>(), 0.1);
    EXPECT_GT(rows[0]["mismatched"].get<std::uint64_t>(), 0u);
    EXPECT_EQ(rows[1]["verdict"], "ok");
    EXPECT_EQ(rows[1]["mismatched"], 0);
    // What it needs on a device, from the judge's own measurement of a call (ReLU: its output
    // is its input's size).
    const json& m = rows[1]["memory"]["problem"];
    EXPECT_GT(m["inputs"].get<std::uint64_t>(), 0u) << rows[1];
    EXPECT_EQ(m["outputs"], m["inputs"]);
    EXPECT_GT(rows[1]["memory"]["total"].get<std::uint64_t>(), m["inputs"].get<std::uint64_t>());
    // The text form says what the flag means.
    auto text =
        run_command(quote(KBENCH_BINARY) + " dataset audit --python " + quote(KBENCH_TEST_PYTHON) +
                    " --device cpu --dataset " + quote((dir_ / "tree").string()));
    EXPECT_NE(text.out.find("ill-conditioned: an exact candidate can miss this reference"),
              std::string::npos)
        << text.out;
    EXPECT_NE(text.out.find("2 problem(s): 1 ill-conditioned"), std::string::npos) << text.out;
    EXPECT_NE(text.out.find("needs"), std::string::npos) << text.out;
}

TEST_F(Cli, TfThirtyTwoSettingIsCheckedAndRecorded) {
    std::string good = write("good.py", kPureRelu);
    auto bad = run_command(
        kbench("--device cpu --tf32 sometimes " + quote(kReference) + " " + quote(good)));
    EXPECT_EQ(bad.exit_code, 2) << bad.err;
    EXPECT_NE(bad.err.find("use off"), std::string::npos) << bad.err;
    auto on = run_command(kbench("--device cpu --json --no-timing -q --tf32 on " +
                                 quote(kReference) + " " + quote(good)));
    ASSERT_EQ(on.exit_code, 0) << on.err;
    json v = json_lines(on.out).at(0);
    EXPECT_EQ(v["config"]["tf32"], "on");
    EXPECT_EQ(v["config"]["atol"], 1e-2);  // TF32 keeps fp16's mantissa: fp16's tolerance
    EXPECT_EQ(v["config"]["precision_state"]["tf32_matmul"], true);
    EXPECT_EQ(v["config"]["precision_state"]["float32_matmul_precision"], "high");
    auto strict = run_command(
        kbench("--device cpu --json --no-timing -q " + quote(kReference) + " " + quote(good)));
    json s = json_lines(strict.out).at(0);
    EXPECT_EQ(s["config"]["tf32"], "off");
    EXPECT_EQ(s["config"]["atol"], 1e-4);
    EXPECT_EQ(s["config"]["precision_state"]["tf32_matmul"], false);
    EXPECT_EQ(s["config"]["precision_state"]["tf32_conv"], false);
    EXPECT_EQ(s["config"]["precision_state"]["float32_matmul_precision"], "highest");
    auto kb = run_command(kbench("--device cpu --json --no-timing -q --mode kernelbench " +
                                 quote(kReference) + " " + quote(good)));
    json k = json_lines(kb.out).at(0);
    EXPECT_EQ(k["config"]["tf32"], "default");
    EXPECT_EQ(k["config"]["precision_state"]["tf32_conv"], true);  // PyTorch's own default
}

TEST_F(Cli, TextVerdictIsReadable) {
    std::string good = write("good.py", kPureRelu);
    auto r = run_command(
        kbench("--device cpu --max-seconds 1 -q " + quote(kReference) + " " + quote(good)));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("status       correct (5/5 trials)"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("speedup"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("baseline"), std::string::npos) << r.out;
}

TEST_F(Cli, RelativeCacheDirHoldsTheBuild) {
    std::string cand = write("ext.py", R"(import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline
ext = load_inline(name="kbench_cli_relative_cache",
                  cpp_sources="torch::Tensor f(torch::Tensor x) { return x.clamp_min(0); }",
                  functions=["f"])
class ModelNew(nn.Module):
    def forward(self, x):
        return ext.f(x)
)");
    std::string command = "cd " + quote(dir_.string()) + " && " +
                          kbench("--device cpu --json --no-timing -q --cache-dir rel-cache " +
                                 quote(kReference) + " " + quote(cand));
    auto first = run_command(command);
    ASSERT_EQ(first.exit_code, 0) << first.err << first.out;
    bool found = false;
    for (const auto& entry : fs::recursive_directory_iterator(dir_ / "rel-cache"))
        found |= entry.path().filename() == "kbench_cli_relative_cache.so";
    EXPECT_TRUE(found) << "the extension was not built into the relative cache folder";
    // Built once: the second run loads it from the cache instead of compiling again.
    auto second = run_command(command);
    ASSERT_EQ(second.exit_code, 0) << second.err;
    json v = json_lines(second.out).at(0);
    EXPECT_LT(v["phases_s"]["load"].get<double>(), 10.0) << v.dump(2);
}

}  // namespace

namespace {

// Whether any process's command line holds token.
bool a_process_mentions(const std::string& token) {
    for (const auto& entry : fs::directory_iterator("/proc")) {
        std::ifstream in(entry.path() / "cmdline");
        std::string cmdline((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        for (char& c : cmdline)
            if (c == '\0') c = ' ';
        if (cmdline.find(token) != std::string::npos && cmdline.find("kbench") == std::string::npos)
            return true;
    }
    return false;
}

// Builders give way to the judge and the sandboxes: they run under SCHED_IDLE (field 41 of
// /proc/self/stat, 5), forked so by a zygote of normal priority; the sandbox that evaluates the
// candidate does not. A builder's import that fails is no verdict (the sandbox imports again),
// but its compile error is: where the policy is wrong the candidate builds a broken source.
TEST_F(Cli, BuildersRunUnderSchedIdleAndSandboxesDoNot) {
    std::string candidate = write("policy.py", R"PY(import os
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline
with open("/proc/self/stat") as f:
    policy = int(f.read().rsplit(")", 1)[1].split()[38])
building = bool(os.environ.get("KBENCH_BUILD_DEVICE")) and not os.environ.get("KBENCH_PREBUILT")
right = policy == (5 if building else 0)
source = "torch::Tensor same(torch::Tensor x) { return x.relu(); }" + ("" if right else (
    "\n#error scheduling policy " + str(policy) + (" while building" if building else "")))
ext = load_inline(name="policy_ext", cpp_sources=source, functions=["same"])
class ModelNew(nn.Module):
    def forward(self, x):
        return ext.same(x)
)PY");
    // A cache of its own: a build kept from an earlier run would not be built again (and no
    // build support, which would take a minute to make there).
    auto r = run_command(kbench(
        "--device cpu --json --no-timing -q --no-build-support --cache-dir " +
        quote((dir_ / "cache").string()) + " " + quote(kReference) + " " + quote(candidate)));
    auto verdicts = json_lines(r.out);
    ASSERT_EQ(verdicts.size(), 1u) << r.out << r.err;
    EXPECT_EQ(verdicts[0]["status"], "correct") << verdicts[0].dump(2);
}

// A candidate that starts a detached process (its own session, orphaned at once) must not leave
// it running beside the next candidate: it dies with the candidate's sandbox, before anything
// else runs, and the verdict names it.
TEST_F(Cli, ProcessesACandidateLeavesBehindAreKilledBeforeTheNext) {
    std::string token = "300." + std::to_string(::getpid());
    std::string leaves = write("leaves_daemon.py", R"PY(import os
import torch
import torch.nn as nn
if os.environ.get("KBENCH_PREBUILT") and os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execvp("sleep", ["sleep", ")PY" + token + R"PY("])
    os._exit(0)
class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
)PY");
    std::string next = write("next.py", kPureRelu);
    auto r = run_command(kbench("--device cpu --json --no-timing -q " + quote(kReference) + " " +
                                quote(leaves) + " " + quote(next)));
    auto verdicts = json_lines(r.out);
    ASSERT_EQ(verdicts.size(), 2u) << r.out << r.err;
    EXPECT_EQ(verdicts[0]["status"], "correct") << verdicts[0].dump(2);
    EXPECT_EQ(verdicts[1]["status"], "correct") << verdicts[1].dump(2);
    EXPECT_NE(verdicts[0]["integrity"].dump().find("sleep"), std::string::npos)
        << "the verdict names what the candidate left behind: " << verdicts[0].dump(2);
    EXPECT_FALSE(a_process_mentions("sleep " + token)) << "the candidate's process outlived it";
}

}  // namespace

namespace {

// Some toolchains (a g++ wrapper whose library folder holds only libstdc++.a, or one that adds
// -static-libstdc++) link libstdc++ into every extension they build. That second copy's
// streams, beside libtorch's, break on the first number they format: a TORCH_CHECK message
// with a value in it came out cut short here and crashed the process on the H200 machine.
// kbench links candidates' extensions against the libstdc++ already loaded.
TEST_F(Cli, AnExtensionFromACompilerThatLinksLibstdcxxStaticallyStillFormatsNumbers) {
    auto probe = run_command("c++ -print-file-name=libstdc++.a");
    if (probe.out.find('/') == std::string::npos)
        GTEST_SKIP() << "no libstdc++.a for c++ here, so no compiler can link it statically";
    std::string wrapper = write("static-gxx", "#!/bin/sh\nexec c++ -static-libstdc++ \"$@\"\n");
    fs::permissions(wrapper, fs::perms::owner_exec, fs::perm_options::add);
    std::string cand = write("checks_dims.py", R"(import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline
src = '''
torch::Tensor f(torch::Tensor x) {
  TORCH_CHECK(x.dim() == 3, "expected 3 dimensions, got ", x.dim(), " and scale ", 1.5);
  return x.clamp_min(0);
}
'''
ext = load_inline(name="kbench_cli_static_libstdcxx", cpp_sources=src, functions=["f"])
class ModelNew(nn.Module):
    def forward(self, x):
        return ext.f(x)
)");
    auto r = run_command("CXX=" + quote(wrapper) + " " +
                         kbench("--device cpu --json --no-timing -q --cache-dir " +
                                quote((dir_ / "cache").string()) + " " + quote(kReference) + " " +
                                quote(cand)));
    auto verdicts = json_lines(r.out);
    ASSERT_EQ(verdicts.size(), 1u) << r.out << r.err;
    EXPECT_EQ(verdicts[0]["status"], "runtime_error") << verdicts[0].dump(2);
    EXPECT_NE(
        verdicts[0]["reason"].get<std::string>().find("expected 3 dimensions, got 2 and scale 1.5"),
        std::string::npos)
        << verdicts[0].dump(2);
}

TEST_F(Cli, RulesListsEveryRuleAndReviewsFilesWithoutRunningThem) {
    auto list = run_command(quote(KBENCH_BINARY) + " rules --json");
    ASSERT_EQ(list.exit_code, 0) << list.err;
    json rules = json::parse(list.out);
    std::map<std::string, json> by_id;
    for (const auto& r : rules) by_id[r["rule"]] = r;
    for (const char* id : {"no_backend", "no_kernel_call", "try_fallback", "pass_inheritance",
                           "monkeypatch", "concurrency", "introspection", "tensor_subclass",
                           "no_candidate_kernel", "decoy_kernel", "below_floor"}) {
        ASSERT_TRUE(by_id.count(id)) << id;
        EXPECT_EQ(by_id[id]["strict"], "reject") << id;
        EXPECT_EQ(by_id[id]["permissive"], "warn") << id;
    }
    EXPECT_EQ(by_id["torch_compute"]["strict"], "warn") << "library ops beside kernels are normal";

    std::string fallback = write("fallback.py", kPureRelu);
    auto review = run_command(quote(KBENCH_BINARY) + " rules --python " +
                              quote(KBENCH_TEST_PYTHON) + " " + quote(fallback));
    EXPECT_EQ(review.exit_code, 1) << review.out << review.err;
    EXPECT_NE(review.out.find("rejected (no_backend)"), std::string::npos) << review.out;
    EXPECT_NE(review.out.find("(line 5: return torch.relu(x))"), std::string::npos) << review.out;
    auto allowed = run_command(quote(KBENCH_BINARY) +
                               " rules --allow no_backend --allow "
                               "no_kernel_call " +
                               quote(fallback));
    EXPECT_EQ(allowed.exit_code, 0) << allowed.out << allowed.err;
    auto permissive =
        run_command(quote(KBENCH_BINARY) + " rules --policy permissive " + quote(fallback));
    EXPECT_EQ(permissive.exit_code, 0) << permissive.out;
    auto denied = run_command(quote(KBENCH_BINARY) + " rules --deny torch_compute " +
                              quote(std::string(KBENCH_FIXTURE_DIR) + "/cuda/honest_epilogue.py"));
    EXPECT_EQ(denied.exit_code, 1) << denied.out;
    auto unknown =
        run_command(quote(KBENCH_BINARY) + " rules --allow no_such_rule " + quote(fallback));
    EXPECT_EQ(unknown.exit_code, 2);
    EXPECT_NE(unknown.err.find("known rules: "), std::string::npos) << unknown.err;
}

TEST_F(Cli, ASourceTheAnalyzerCannotReadThroughIsRejectedUnderEveryPolicy) {
    auto list = run_command(quote(KBENCH_BINARY) + " rules --json");
    ASSERT_EQ(list.exit_code, 0) << list.err;
    std::map<std::string, json> by_id;
    for (const auto& r : json::parse(list.out)) by_id[r["rule"]] = r;
    for (const char* id : {"unanalyzable", "oversized"})
        for (const char* policy : {"strict", "kernelbench", "permissive"})
            EXPECT_EQ(by_id[id][policy], "reject") << id << " under " << policy;

    // Over 1 MiB: neither analyzed nor built, whatever the policy.
    std::string big = write(
        "big.py", std::string(kPureRelu) + "\n# " + std::string(std::size_t(1) << 20, 'x') + "\n");
    auto oversized = run_command(quote(KBENCH_BINARY) + " rules --policy permissive " + quote(big));
    EXPECT_EQ(oversized.exit_code, 1) << oversized.out << oversized.err;
    EXPECT_NE(oversized.out.find("rejected (oversized)"), std::string::npos) << oversized.out;
    EXPECT_NE(oversized.out.find("neither analyzed nor built"), std::string::npos) << oversized.out;

    // An analyzer that dies (here its interpreter does) is no free pass under permissive either.
    fs::path dead = dir_ / "dead-python";
    {
        std::ofstream f(dead);
        f << "#!/bin/sh\nexit 3\n";
    }
    fs::permissions(dead, fs::perms::owner_all);
    std::string small = write("small.py", kPureRelu);
    auto failed = run_command(quote(KBENCH_BINARY) + " rules --policy permissive --python " +
                              quote(dead.string()) + " " + quote(small));
    EXPECT_EQ(failed.exit_code, 1) << failed.out << failed.err;
    EXPECT_NE(failed.out.find("rejected (unanalyzable)"), std::string::npos) << failed.out;
    EXPECT_NE(failed.out.find("exit code 3"), std::string::npos) << failed.out;
}

TEST_F(Cli, AStaticRejectionIsNeverBuiltAndNamesTheLine) {
    // Its C++ does not compile: were it built, its verdict would be compile_error.
    std::string fallback = write("fallback.py", R"PY(import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

ext = load_inline(name="never_built", cpp_sources="this is not C++", functions=["f"])


class ModelNew(nn.Module):
    def forward(self, x):
        try:
            return ext.f(x)
        except RuntimeError:
            return torch.relu(x)
)PY");
    auto r =
        run_command(quote(KBENCH_BINARY) + " check --device cpu --json -q --python " +
                    quote(KBENCH_TEST_PYTHON) + " " + quote(kReference) + " " + quote(fallback));
    EXPECT_EQ(r.exit_code, 1) << r.err;
    json v = json_lines(r.out).at(0);
    EXPECT_EQ(v["status"], "rejected") << v.dump(2);
    EXPECT_NE(v["reason"].get<std::string>().find("static rule try_fallback"), std::string::npos)
        << v["reason"];
    EXPECT_FALSE(v["phases_s"].contains("build")) << v.dump(2);
    EXPECT_TRUE(v["phases_s"].contains("review"));
    bool named = false;
    for (const auto& f : v["integrity"])
        if (f["rule"] == "try_fallback") {
            named = true;
            EXPECT_EQ(f["severity"], "reject");
            EXPECT_EQ(f["line"], 12);
            EXPECT_EQ(f["evidence"], "except RuntimeError:");
        }
    EXPECT_TRUE(named) << v["integrity"].dump(2);
    EXPECT_EQ(v["config"]["policy"]["name"], "strict");
    // The text form shows the rule and the line too.
    auto text =
        run_command(quote(KBENCH_BINARY) + " check --device cpu -q --python " +
                    quote(KBENCH_TEST_PYTHON) + " " + quote(kReference) + " " + quote(fallback));
    EXPECT_NE(text.out.find("reject try_fallback: "), std::string::npos) << text.out;
    EXPECT_NE(text.out.find("(line 12: except RuntimeError:)"), std::string::npos) << text.out;
}

TEST_F(Cli, TheAuditFlagsADegenerateProblemAndVerdictsAndScoresCarryTheFlag) {
    // Max over a dimension, then minus its own mean over that (one-wide) dimension: all zeros,
    // whatever the input (KernelBench's level 2 problems 80 and 83 are of this kind).
    fs::create_directories(dir_ / "tree" / "level2");
    std::ofstream(dir_ / "tree" / "level2" / "1_MaxMinusMean.py") << R"PY(import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        m = torch.max(x, dim=1, keepdim=True).values
        return m - m.mean(dim=1, keepdim=True)


def get_inputs():
    return [torch.randn(8, 256)]


def get_init_inputs():
    return []
)PY";
    std::string env = "KBENCH_CACHE=" + quote((dir_ / "cache").string()) + " ";
    auto audit = run_command(env + quote(KBENCH_BINARY) + " dataset audit --python " +
                             quote(KBENCH_TEST_PYTHON) + " --device cpu --json --dataset " +
                             quote((dir_ / "tree").string()));
    ASSERT_EQ(audit.exit_code, 0) << audit.err;
    json row = json_lines(audit.out).at(0);
    EXPECT_EQ(row["health"]["constant_output"], true) << row.dump(2);
    EXPECT_EQ(row["health"]["zero_passes"], true) << row.dump(2);
    EXPECT_EQ(row["health"]["nondeterministic"], false) << row.dump(2);
    EXPECT_EQ(row["health"]["seeds"], 5);
    EXPECT_TRUE(row["work"].contains("bytes")) << row.dump(2);

    // A candidate that returns zeros without reading its input: correct, and flagged.
    std::string zeros = write("zeros.py", R"PY(import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.zeros(x.shape[0], 1)
)PY");
    auto check = run_command(env + quote(KBENCH_BINARY) +
                             " check --device cpu --json -q --no-timing --policy permissive "
                             "--python " +
                             quote(KBENCH_TEST_PYTHON) + " " +
                             quote((dir_ / "tree" / "level2" / "1_MaxMinusMean.py").string()) +
                             " " + quote(zeros));
    ASSERT_EQ(check.exit_code, 0) << check.err;
    json v = json_lines(check.out).at(0);
    EXPECT_EQ(v["status"], "correct");
    EXPECT_EQ(v["problem_health"]["flags"], json({"constant_output", "zero_passes"})) << v.dump(2);

    // Scores say how many flagged problems they hold, and leave them out when asked.
    std::ofstream(dir_ / "candidates.jsonl")
        << json{{"level", 2}, {"problem_id", 1}, {"sample_id", 0}, {"code", read(zeros)}}.dump()
        << "\n";
    std::string eval = env + quote(KBENCH_BINARY) +
                       " eval --device cpu --policy permissive --no-timing -q --python " +
                       quote(KBENCH_TEST_PYTHON) + " --dataset " + quote((dir_ / "tree").string()) +
                       " --candidates " + quote((dir_ / "candidates.jsonl").string()) +
                       " --runs-dir " + quote((dir_ / "runs").string());
    auto in = run_command(eval + " --run in");
    ASSERT_EQ(in.exit_code, 0) << in.err;
    EXPECT_NE(in.out.find("1 problem(s) flagged by the audit are in the shares"), std::string::npos)
        << in.out;
    auto out = run_command(eval + " --run out --exclude-flagged");
    ASSERT_EQ(out.exit_code, 0) << out.err;
    EXPECT_NE(out.out.find("1 problem(s) flagged by the audit left out of the shares"),
              std::string::npos)
        << out.out;
    EXPECT_NE(out.out.find("0 problems"), std::string::npos) << out.out;
}

TEST_F(Cli, NoTensorOfAProblemOutlivesItInTheJudge) {
    // Three problems in one eval: with KBENCH_CHECK_LEAKS the judge refuses to prepare the next
    // one while a tensor of the last is alive (the flop counter's cycle kept a call's inputs and
    // outputs until Python's collector ran; on a GPU 12 GiB a problem for 6 GiB inputs).
    std::ofstream data(dir_ / "data.jsonl"), cands(dir_ / "candidates.jsonl");
    for (int i = 1; i <= 3; ++i) {
        std::string body =
            "import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n"
            "    def forward(self, x):\n        return torch.relu(x) * " +
            std::to_string(i) +
            "\n\n\ndef get_inputs():\n    return [torch.randn(64, 256)]\n\n\n"
            "def get_init_inputs():\n    return []\n";
        data << json{{"level", 1},
                     {"problem_id", i},
                     {"name", std::to_string(i) + "_relu"},
                     {"code", body}}
                    .dump()
             << "\n";
        std::string cand = body;
        cand.replace(cand.find("class Model("), 12, "class ModelNew(");
        cands << json{{"level", 1}, {"problem_id", i}, {"sample_id", 0}, {"code", cand}}.dump()
              << "\n";
    }
    data.close();
    cands.close();
    auto r = run_command("KBENCH_CHECK_LEAKS=1 KBENCH_CACHE=" + quote((dir_ / "cache").string()) +
                         " " + quote(KBENCH_BINARY) + " eval --python " +
                         quote(KBENCH_TEST_PYTHON) + " --device cpu --policy permissive " +
                         "--max-seconds 0.1 --dataset " + quote((dir_ / "data.jsonl").string()) +
                         " --candidates " + quote((dir_ / "candidates.jsonl").string()) +
                         " --runs-dir " + quote((dir_ / "runs").string()) + " --run leaks");
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.err.find("outlived"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("harness failure"), std::string::npos) << r.err;
    EXPECT_NE(r.out.find("correct 3"), std::string::npos) << r.out;
}

}  // namespace
