// The command line as a user meets it: exit codes, messages, output formats, paths.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
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

    std::string write(const std::string& name, const std::string& text) {
        fs::path path = dir_ / name;
        std::ofstream(path) << text;
        return path.string();
    }

    std::string kbench(const std::string& args) {
        return quote(KBENCH_BINARY) + " check --python " + quote(KBENCH_TEST_PYTHON) + " " + args;
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

std::vector<json> json_lines(const std::string& text) {
    std::vector<json> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);)
        if (!line.empty()) out.push_back(json::parse(line));
    return out;
}

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
    auto r = run_command(quote(KBENCH_BINARY) + " dataset audit --python " +
                         quote(KBENCH_TEST_PYTHON) + " --device cpu --json --dataset " +
                         quote((dir_ / "tree").string()));
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
    // The text form says what the flag means.
    auto text = run_command(quote(KBENCH_BINARY) + " dataset audit --python " +
                            quote(KBENCH_TEST_PYTHON) + " --device cpu --dataset " +
                            quote((dir_ / "tree").string()));
    EXPECT_NE(text.out.find("ill-conditioned: an exact candidate can miss this reference"),
              std::string::npos)
        << text.out;
    EXPECT_NE(text.out.find("2 problem(s): 1 ill-conditioned"), std::string::npos) << text.out;
}

TEST_F(Cli, TfThirtyTwoSettingIsCheckedAndRecorded) {
    std::string good = write("good.py", kPureRelu);
    auto bad = run_command(kbench("--device cpu --tf32 sometimes " + quote(kReference) + " " +
                                  quote(good)));
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
    auto strict = run_command(kbench("--device cpu --json --no-timing -q " + quote(kReference) +
                                     " " + quote(good)));
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

}  // namespace
