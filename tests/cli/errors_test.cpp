// What a user meets when an input is not what kbench expects: one line saying what is wrong and
// one saying what to do (exit code 2), never a traceback; or the input just works.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "support/command.hpp"

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using kbench::test::CommandResult;
using kbench::test::quote;
using kbench::test::run_command;

const std::string kFixtures = KBENCH_FIXTURE_DIR;

const char* kProblem = R"(import torch
import torch.nn as nn
class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)
def get_inputs():
    return [torch.randn(8, 16)]
def get_init_inputs():
    return []
)";

const char* kCandidate = R"(import torch
import torch.nn as nn
class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
)";

class Errors : public ::testing::Test {
  protected:
    void SetUp() override {
        dir_ = fs::temp_directory_path() /
               ("kbench-errors-" + std::to_string(::getpid()) + "-" +
                ::testing::UnitTest::GetInstance()->current_test_info()->name());
        fs::remove_all(dir_);
        fs::create_directories(dir_);
    }
    void TearDown() override { fs::remove_all(dir_); }

    std::string write(const std::string& name, const std::string& text) {
        fs::path path = dir_ / name;
        fs::create_directories(path.parent_path());
        std::ofstream(path, std::ios::binary) << text;
        return path.string();
    }

    // kbench with these arguments, each quoted.
    static CommandResult kbench(std::initializer_list<std::string> args) {
        std::string line = quote(KBENCH_BINARY);
        for (const auto& a : args) line += " " + quote(a);
        return run_command(line);
    }

    static CommandResult dataset(const std::string& sub, const std::string& spec,
                                 std::initializer_list<std::string> more = {}) {
        std::string line = quote(KBENCH_BINARY) + " dataset " + sub + " --python " +
                           quote(KBENCH_TEST_PYTHON) + " --dataset " + quote(spec);
        for (const auto& a : more) line += " " + quote(a);
        return run_command(line);
    }

    // A KernelBench tree: level1/1_A.py, level1/2_B.py, level2/1_C.py under root.
    std::string kernelbench_tree(const std::string& root) {
        write(root + "/level1/1_A.py", kProblem);
        write(root + "/level1/2_B.py", kProblem);
        write(root + "/level1/notes.txt", "not a problem");
        write(root + "/level2/1_C.py", kProblem);
        return (dir_ / root).string();
    }

    // "level/id name" of each problem `dataset list --json` prints.
    static std::vector<std::string> listed(const CommandResult& r) {
        std::vector<std::string> out;
        std::istringstream lines(r.out);
        for (std::string line; std::getline(lines, line);) {
            if (line.empty()) continue;
            json p = json::parse(line);
            out.push_back(std::to_string(p["level"].get<int>()) + "/" +
                          std::to_string(p["problem_id"].get<int>()) + " " +
                          p["name"].get<std::string>());
        }
        return out;
    }

    fs::path dir_;
};

// The two lines kbench prints for a UsageError.
std::string usage_error(const std::string& what, const std::string& hint) {
    return "kbench: error: " + what + "\n  what to do: " + hint + "\n";
}

// --- 1. A dataset file that is not Parquet -----------------------------------------------------

const std::string kParquetHint =
    "give a Parquet file with the columns code, level, name and problem_id (KernelBench's "
    "Hugging Face layout), or the same rows as JSON lines (.jsonl)";

TEST_F(Errors, ATextFileNamedParquetIsNotAParquetFile) {
    std::string file = write("x.parquet", "hello, this is text\n");
    for (const char* sub : {"list", "audit"}) {
        auto r = dataset(sub, file);
        EXPECT_EQ(r.exit_code, 2) << sub;
        EXPECT_EQ(r.err, usage_error(file + " is not a Parquet file: it does not begin and end "
                                            "with PAR1, Parquet's marker",
                                     kParquetHint))
            << sub;
        EXPECT_EQ(r.out, "") << sub;
    }
    auto e = kbench({"eval", "--device", "cpu", "--python", KBENCH_TEST_PYTHON, "--dataset", file,
                     "--runs-dir", (dir_ / "runs").string(), "-q"});
    EXPECT_EQ(e.exit_code, 2);
    EXPECT_EQ(e.err, usage_error(file + " is not a Parquet file: it does not begin and end with "
                                        "PAR1, Parquet's marker",
                                 kParquetHint));
}

TEST_F(Errors, GarbageBytesAreNotADataset) {
    std::string bytes;
    for (int i = 0; i < 4096; ++i) bytes += char((i * 7919 + 13) % 256);
    std::string named_parquet = write("g.parquet", bytes);
    auto r = dataset("list", named_parquet);
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_EQ(r.err, usage_error(named_parquet + " is not a Parquet file: it does not begin and "
                                                 "end with PAR1, Parquet's marker",
                                 kParquetHint));
    std::string other = write("g.bin", bytes);
    auto o = dataset("list", other);
    EXPECT_EQ(o.exit_code, 2);
    EXPECT_EQ(o.err, usage_error(other + " is neither JSON lines nor a Parquet file",
                                 "give a .jsonl file of problem rows (code, level, name, "
                                 "problem_id), a .parquet file with those columns, or a "
                                 "KernelBench folder"));
}

TEST_F(Errors, ABrokenParquetFileSaysWhichPartIsUnreadableInOneLine) {
    // Parquet's marker at both ends, nothing readable between them.
    std::string file = write("broken.parquet", "PAR1 not really parquet PAR1");
    auto r = dataset("list", file);
    EXPECT_EQ(r.exit_code, 2);
    const std::string head = "kbench: error: " + file + " is not a readable Parquet file: ";
    ASSERT_EQ(r.err.rfind(head, 0), 0u) << r.err;
    EXPECT_NE(r.err.find("  what to do: check that the file is whole (download it again), or give "
                         "the problems as JSON lines (.jsonl)\n"),
              std::string::npos)
        << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 2) << r.err;
    EXPECT_EQ(r.err.find("Traceback"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("pip install"), std::string::npos) << r.err;
}

TEST_F(Errors, AParquetFileWithoutTheProblemColumnsNamesThem) {
    std::string file = (dir_ / "other.parquet").string();
    auto made = run_command(quote(KBENCH_TEST_PYTHON) +
                            " -c 'import sys, pyarrow as pa, pyarrow.parquet as pq; "
                            "pq.write_table(pa.table({\"code\": [\"x\"], \"title\": [\"t\"]}), "
                            "sys.argv[1])' " +
                            quote(file));
    if (made.exit_code != 0) GTEST_SKIP() << "needs pyarrow in " << KBENCH_TEST_PYTHON;
    auto r = dataset("list", file);
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_EQ(r.err, usage_error(file + " lacks columns of the problem layout: missing level, "
                                        "name, problem_id; it has code, title",
                                 kParquetHint));
}

// --- 2. Level folders as datasets --------------------------------------------------------------

TEST_F(Errors, AFolderOfLevelFoldersIsADataset) {
    std::string root = kernelbench_tree("KernelBench");
    std::vector<std::string> all = {"1/1 1_A", "1/2 2_B", "2/1 1_C"};
    auto r = dataset("list", root, {"--json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(listed(r), all);
    // A checkout holding KernelBench/level1 ...
    auto checkout = dataset("list", dir_.string(), {"--json"});
    EXPECT_EQ(checkout.exit_code, 0) << checkout.err;
    EXPECT_EQ(listed(checkout), all);
}

TEST_F(Errors, OneLevelsFolderIsADatasetOfThatLevel) {
    std::string root = kernelbench_tree("KernelBench");
    auto one = dataset("list", root + "/level1", {"--json"});
    EXPECT_EQ(one.exit_code, 0) << one.err;
    EXPECT_EQ(listed(one), (std::vector<std::string>{"1/1 1_A", "1/2 2_B"}));
    auto slash = dataset("list", root + "/level2/", {"--json"});
    EXPECT_EQ(slash.exit_code, 0) << slash.err;
    EXPECT_EQ(listed(slash), (std::vector<std::string>{"2/1 1_C"}));
    auto shown = dataset("show", root + "/level2", {"2/1"});
    EXPECT_EQ(shown.exit_code, 0) << shown.err;
    EXPECT_EQ(shown.out.rfind("# level 2 problem 1 (1_C)", 0), 0u) << shown.out;
    auto relative = run_command("cd " + quote(root + "/level1") + " && " + quote(KBENCH_BINARY) +
                                " dataset list --json --dataset .");
    EXPECT_EQ(relative.exit_code, 0) << relative.err;
    EXPECT_EQ(listed(relative), (std::vector<std::string>{"1/1 1_A", "1/2 2_B"}));
}

TEST_F(Errors, EvalTakesALevelsFolder) {
    std::string root = kernelbench_tree("KernelBench");
    write("candidates/1_A/0.py", kCandidate);
    write("candidates/2_B/0.py", kCandidate);
    auto r = kbench({"eval", "--policy", "permissive", "--device", "cpu", "--python",
                     KBENCH_TEST_PYTHON, "--dataset", root + "/level1", "--candidates",
                     (dir_ / "candidates").string(), "--runs-dir", (dir_ / "runs").string(),
                     "--cache-dir", (dir_ / "cache").string(), "--no-timing", "--json", "-q"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::vector<std::string> judged;
    std::istringstream lines(r.out);
    for (std::string line; std::getline(lines, line);) {
        if (line.empty()) continue;
        json v = json::parse(line);
        judged.push_back(std::to_string(v["problem"]["level"].get<int>()) + "/" +
                         std::to_string(v["problem"]["id"].get<int>()) + " " +
                         v["status"].get<std::string>());
    }
    std::sort(judged.begin(), judged.end());
    EXPECT_EQ(judged, (std::vector<std::string>{"1/1 correct", "1/2 correct"})) << r.out;
}

const std::string kLayoutsHint =
    "give a folder of level folders (KernelBench/, holding level1/19_ReLU.py ...), one level's "
    "folder (KernelBench/level1), or a .jsonl or .parquet file with the columns code, level, "
    "name, problem_id";

TEST_F(Errors, AFolderKbenchCannotReadSaysWhichLayoutsItReads) {
    write("problems/1_A.py", kProblem);
    std::string unnamed = (dir_ / "problems").string();
    auto r = dataset("list", unnamed);
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_EQ(r.err, usage_error(unnamed + " holds problem files, but its name gives no level",
                                 "put them in a folder named for their level "
                                 "(level1/19_ReLU.py), or give the folder that holds level1/, "
                                 "level2/ ..."));
    fs::create_directories(dir_ / "empty");
    std::string empty = (dir_ / "empty").string();
    auto e = dataset("list", empty);
    EXPECT_EQ(e.exit_code, 2);
    EXPECT_EQ(e.err, usage_error("no problems found in " + empty, kLayoutsHint));
}

// --- 3. A CUDA candidate on the CPU ------------------------------------------------------------

TEST_F(Errors, ACudaCandidateOnTheCpuIsACompileErrorThatSaysSo) {
    std::string load_cu = write("load_cu.py", R"(import torch
import torch.nn as nn
from torch.utils.cpp_extension import load
ext = load(name="kbench_errors_load_cu", sources=["relu.cpp", "relu_kernel.cu"])
class ModelNew(nn.Module):
    def forward(self, x):
        return ext.relu(x)
)");
    auto r = kbench({"check", "--policy", "permissive", "--device", "cpu", "--python",
                     KBENCH_TEST_PYTHON, "--cache-dir", (dir_ / "cache").string(), "--json",
                     "--no-timing", "-q", kFixtures + "/references/relu_small.py",
                     kFixtures + "/cuda/honest.py", load_cu});
    EXPECT_EQ(r.exit_code, 1) << r.err;
    std::vector<json> verdicts = kbench::test::json_lines(r.out);
    ASSERT_EQ(verdicts.size(), 2u) << r.out << r.err;
    EXPECT_EQ(verdicts[0]["status"], "compile_error");
    EXPECT_EQ(verdicts[0]["reason"],
              "compile error: the candidate builds CUDA code (cuda_sources in load_inline), but "
              "the device is the CPU: run it on a GPU with --device cuda");
    EXPECT_EQ(verdicts[1]["status"], "compile_error");
    EXPECT_EQ(verdicts[1]["reason"],
              "compile error: the candidate builds CUDA code (CUDA file relu_kernel.cu in load), "
              "but the device is the CPU: run it on a GPU with --device cuda");
    for (const auto& v : verdicts)
        EXPECT_EQ(v.value("log", std::string()).find("IndexError"), std::string::npos) << v["log"];
}

// --- The build cache: its size stated, bounded and pruned --------------------------------------

TEST_F(Errors, TheBuildCacheIsStatedBoundedAndPruned) {
    fs::path cache = dir_ / "cache";
    // An old build (2 MiB) and a build support, as kbench lays them out.
    fs::create_directories(cache / "ab" / "abold" / "torch_extensions");
    write("cache/ab/abold/build.json", "{}");
    write("cache/ab/abold/torch_extensions/m.so", std::string(2 << 20, 'x'));
    fs::create_directories(cache / "support" / "s1" / "pch");
    write("cache/support/s1/pch/h.gch", std::string(1 << 20, 'y'));
    write("cache/support/s1.checked", "stamp");
    auto old = fs::file_time_type::clock::now() - std::chrono::hours(48);
    fs::last_write_time(cache / "ab" / "abold" / "build.json", old);
    auto shown = kbench({"cache", "--cache-dir", cache.string()});
    EXPECT_EQ(shown.exit_code, 0) << shown.err;
    EXPECT_NE(shown.out.find("candidate builds  1, 2.0 MiB"), std::string::npos) << shown.out;
    EXPECT_NE(shown.out.find("build supports    1, 1.0 MiB"), std::string::npos) << shown.out;
    EXPECT_NE(shown.out.find("of at most 10.00 GiB"), std::string::npos) << shown.out;

    // A command that builds keeps the cache within KBENCH_CACHE_MAX_GIB: the old build goes, the
    // new one (used last) stays.
    auto r = run_command(
        "KBENCH_CACHE_MAX_GIB=0.002 " + quote(KBENCH_BINARY) +
        " check --device cpu --no-build-support --no-timing --python " + quote(KBENCH_TEST_PYTHON) +
        " --cache-dir " + quote(cache.string()) + " " +
        quote(kFixtures + "/../../suite/problems/level1/1_ReLU.py") + " " +
        quote(kFixtures + "/../../suite/candidates/cpu/level_1_problem_1_sample_0_kernel.py"));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("least recently used build cache entries"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(cache / "ab" / "abold"));
    auto after = kbench({"cache", "--cache-dir", cache.string()});
    EXPECT_NE(after.out.find("candidate builds  1,"), std::string::npos) << after.out;

    // Pruned by hand, then cleared.
    auto pruned = kbench({"cache", "prune", "--max-gib", "0.0001", "--cache-dir", cache.string()});
    EXPECT_EQ(pruned.exit_code, 0) << pruned.err;
    EXPECT_NE(pruned.out.find("removed "), std::string::npos) << pruned.out;
    auto cleared = kbench({"cache", "clear", "--cache-dir", cache.string()});
    EXPECT_EQ(cleared.exit_code, 0) << cleared.err;
    EXPECT_NE(cleared.out.find("candidate builds  0, 0.0 MiB"), std::string::npos) << cleared.out;
}

// --- 14. A syntax error's line; a candidate without ModelNew is never built --------------------

TEST_F(Errors, ASyntaxErrorNamesItsLineAndACandidateWithoutModelNewIsNotBuilt) {
    std::string syntax = write("syntax.py", R"(import torch
import torch.nn as nn

class ModelNew(nn.Module):
    def forward(self, x)
        return torch.relu(x)
)");
    std::string unnamed = write("unnamed.py", R"(import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline
ext = load_inline("kbench_errors_unnamed", cpp_sources="torch::Tensor f(torch::Tensor x);",
                  functions=["f"])
class Model2(nn.Module):
    def forward(self, x):
        return ext.f(x)
)");
    auto r =
        kbench({"check", "--policy", "permissive", "--device", "cpu", "--python",
                KBENCH_TEST_PYTHON, "--cache-dir", (dir_ / "cache").string(), "--json",
                "--no-timing", "-q", kFixtures + "/references/relu_small.py", syntax, unnamed});
    EXPECT_EQ(r.exit_code, 1) << r.err;
    std::vector<json> verdicts = kbench::test::json_lines(r.out);
    ASSERT_EQ(verdicts.size(), 2u) << r.out << r.err;
    EXPECT_EQ(verdicts[0]["status"], "compile_error");
    EXPECT_NE(verdicts[0]["reason"].get<std::string>().find("(line 5 of syntax.py)"),
              std::string::npos)
        << verdicts[0]["reason"];
    EXPECT_EQ(verdicts[1]["status"], "rejected");
    EXPECT_NE(verdicts[1]["reason"].get<std::string>().find("defines no ModelNew"),
              std::string::npos)
        << verdicts[1]["reason"];
    // Refused by the review: never built (its C++ declares f and defines nothing, so a build
    // would fail at link or load).
    EXPECT_FALSE(verdicts[1]["phases_s"].contains("build")) << verdicts[1]["phases_s"];
}

TEST_F(Errors, TheReferencesNamesAreTheCandidatesUnderKernelBenchsModeAndExplainedOtherwise) {
    // KernelBench runs the reference and the candidate in one namespace: a candidate may
    // subclass its Model and read its constants, at import (so its build sees them too).
    std::string uses = write("uses_model.py", R"(import torch
from torch.utils.cpp_extension import load_inline
ext = load_inline(name="kbench_errors_uses_model", cpp_sources="""
torch::Tensor f(torch::Tensor x) {
    x = x.contiguous();
    auto y = torch::empty_like(x);
    const float* in = x.data_ptr<float>();
    float* out = y.data_ptr<float>();
    for (int64_t i = 0; i < x.numel(); ++i) out[i] = in[i] > 0 ? in[i] : 0;
    return y;
}""", functions=["f"])
assert dim == 4096 and callable(get_inputs)

class ModelNew(Model):
    def forward(self, x):
        return ext.f(x)
)");
    auto check = [&](const std::string& mode) {
        return kbench({"check", "--mode", mode, "--device", "cpu", "--python", KBENCH_TEST_PYTHON,
                       "--cache-dir", (dir_ / "cache").string(), "--json", "--no-timing", "-q",
                       kFixtures + "/references/relu_small.py", uses});
    };
    auto kernelbench = check("kernelbench");
    EXPECT_EQ(kernelbench.exit_code, 0) << kernelbench.err;
    std::vector<json> k = kbench::test::json_lines(kernelbench.out);
    ASSERT_EQ(k.size(), 1u) << kernelbench.out << kernelbench.err;
    EXPECT_EQ(k[0]["status"], "correct") << k[0]["reason"];
    auto strict = check("strict");
    EXPECT_EQ(strict.exit_code, 1) << strict.err;
    std::vector<json> s = kbench::test::json_lines(strict.out);
    ASSERT_EQ(s.size(), 1u) << strict.out << strict.err;
    EXPECT_EQ(s[0]["status"], "load_error");
    std::string reason = s[0]["reason"];
    EXPECT_NE(reason.find("`dim` is the reference's"), std::string::npos) << reason;
    EXPECT_NE(reason.find("--mode kernelbench"), std::string::npos) << reason;
}

TEST_F(Errors, NoJudgeOnAnyGpuStopsWithWhatToCheck) {
    if (std::system("nvidia-smi -L > /dev/null 2>&1") == 0)
        GTEST_SKIP() << "this machine has a GPU: the judge starts there";
    auto r = kbench({"check", "--policy", "permissive", "--device", "cuda", "--python",
                     KBENCH_TEST_PYTHON, "--cache-dir", (dir_ / "cache").string(),
                     kFixtures + "/references/relu_small.py", kFixtures + "/cuda/honest.py"});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("kbench: error: no device could start a judge: "), std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find("  what to do: check the GPUs with nvidia-smi"), std::string::npos)
        << r.err;
    EXPECT_EQ(r.err.find("Traceback"), std::string::npos) << r.err;
    EXPECT_TRUE(r.out.empty()) << "no verdict without a judge: " << r.out;
}

// --- 4. The README's dataset commands on the built-in suite -------------------------------------

TEST_F(Errors, TheReadmesDatasetCommandsWorkOnTheBuiltInSuite) {
    auto list = kbench({"dataset", "list"});
    EXPECT_EQ(list.exit_code, 0) << list.err;
    auto shown = kbench({"dataset", "show", "1/1"});
    EXPECT_EQ(shown.exit_code, 0) << shown.err;
    EXPECT_EQ(shown.out.rfind("# level 1 problem 1 (1_ReLU)", 0), 0u) << shown.out;
    // KernelBench's 1/19 (19_ReLU) is not in the built-in suite, whose level 1 is numbered 1...
    int level1 = 0;
    for (const auto& f : fs::directory_iterator(kFixtures + "/../../suite/problems/level1"))
        if (f.path().extension() == ".py") ++level1;
    auto missing = kbench({"dataset", "show", "1/19"});
    EXPECT_EQ(missing.exit_code, 2);
    EXPECT_EQ(missing.err,
              usage_error(
                  "no problem '1/19' in builtin: its level 1 holds ids 1-" + std::to_string(level1),
                  "name one that exists, as in 1/1, or list them: kbench dataset list "
                  "--dataset builtin"));
}

// --- One command-line grammar ----------------------------------------------------------------

// A command or an option a command does not have is named, with the nearest valid one; options
// that several commands take are taken by each; help shows the defaults as they are.
TEST_F(Errors, UnknownWordsAreNamedWithTheNearestValidOne) {
    auto option = kbench({"check", "--devcie", "cpu", "ref.py", "cand.py"});
    EXPECT_EQ(option.exit_code, 2);
    EXPECT_EQ(option.err, usage_error("unknown option --devcie for kbench check; did you mean "
                                      "--device?",
                                      "kbench check --help lists its options"));
    auto command = kbench({"evaluate", "--device", "cpu"});
    EXPECT_EQ(command.exit_code, 2);
    EXPECT_NE(command.err.find("unknown command 'evaluate' for kbench; did you mean 'eval'?"),
              std::string::npos)
        << command.err;
    EXPECT_NE(command.err.find("the commands are: check, eval,"), std::string::npos) << command.err;
    auto sub = kbench({"dataset", "lsit"});
    EXPECT_NE(sub.err.find("unknown command 'lsit' for kbench dataset; did you mean 'list'?"),
              std::string::npos)
        << sub.err;
    // A value that happens to be a command's name is a value; an option after it is still read.
    auto value = kbench({"eval", "--run", "score", "--level", "1", "2", "--no-rouds"});
    EXPECT_NE(value.err.find("unknown option --no-rouds for kbench eval; did you mean "
                             "--no-rounds?"),
              std::string::npos)
        << value.err;
    auto far = kbench({"eval", "--foo"});
    EXPECT_EQ(far.err, usage_error("unknown option --foo for kbench eval",
                                   "kbench eval --help lists its options"));
    // -q and --cache-dir wherever they apply.
    for (auto args : {std::vector<std::string>{"generate", "-q", "--help"},
                      std::vector<std::string>{"baseline", "-q", "--cache-dir", "/tmp", "--help"},
                      std::vector<std::string>{"refine", "-q", "--cache-dir", "/tmp", "--help"}}) {
        std::string line = quote(KBENCH_BINARY);
        for (const auto& a : args) line += " " + quote(a);
        auto r = run_command(line);
        EXPECT_EQ(r.exit_code, 0) << line << ": " << r.err;
    }
    // Rounds are the default, and help says so.
    auto help = kbench({"eval", "--help"});
    EXPECT_EQ(help.out.find("{false}"), std::string::npos) << help.out;
    EXPECT_NE(help.out.find("over rounds (the default)"), std::string::npos) << help.out;
}

// --- KernelBench candidates and the built-in suite ------------------------------------------

// Candidates from elsewhere are never checked against the built-in suite, whose numbers name
// other problems than KernelBench's: without --dataset they are refused, with what to pass.
TEST_F(Errors, CandidatesFromElsewhereNeedTheirDataset) {
    fs::create_directories(dir_ / "cands");
    write("cands/level_1_problem_5_sample_0_kernel.py", "class ModelNew: pass\n");
    auto r = kbench({"eval", "--device", "cpu", "--candidates", (dir_ / "cands").string()});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("without --dataset: they would be checked against kbench's built-in "
                         "suite"),
              std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find("pass --dataset kernelbench"), std::string::npos) << r.err;
}

// --dataset kernelbench: downloaded once from where KBENCH_KERNELBENCH_URL says (here a real
// HTTP server on loopback serving Parquet files, levels 1-3: level 4 is not served), then read
// from the cache; offline, the error says which files to fetch and where.
TEST_F(Errors, KernelBenchIsOneWordAwayAndSaysWhatToFetchOffline) {
    fs::path site = dir_ / "site";
    fs::create_directories(site / "data");
    auto made = run_command(
        quote(KBENCH_TEST_PYTHON) + " -c " +
        quote("import pyarrow as pa, pyarrow.parquet as pq\n"
              "for level in (1, 2, 3):\n"
              "    code = 'import torch\\nclass Model(torch.nn.Module):\\n    def forward(self, "
              "x):\\n        return x\\ndef get_inputs():\\n    return [torch.randn(4)]\\n"
              "def get_init_inputs():\\n    return []\\n'\n"
              "    t = pa.table({'code': [code, code], 'level': [level, level],\n"
              "                  'name': ['1_A', '2_B'], 'problem_id': [1, 2]})\n"
              "    pq.write_table(t, '" +
              (site / "data").string() + "/level_%d-00000-of-00001.parquet' % level)\n"));
    ASSERT_EQ(made.exit_code, 0) << made.err;
    // A server on a free port of its own choosing, which it writes down.
    fs::path port_file = dir_ / "port";
    std::string serve = quote(KBENCH_TEST_PYTHON) + " -c " +
                        quote(
                            "import functools, http.server, sys\n"
                            "h = functools.partial(http.server.SimpleHTTPRequestHandler, "
                            "directory=sys.argv[1])\n"
                            "s = http.server.ThreadingHTTPServer(('127.0.0.1', 0), h)\n"
                            "open(sys.argv[2], 'w').write(str(s.server_port))\n"
                            "s.serve_forever()\n") +
                        " " + quote(site.string()) + " " + quote(port_file.string()) +
                        " >/dev/null 2>&1 & echo $!";
    auto started = run_command(serve);
    pid_t server = std::stoi(started.out);
    for (int i = 0; i < 100 && (!fs::exists(port_file) || fs::file_size(port_file) == 0); ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    ASSERT_TRUE(fs::exists(port_file));
    std::string port;
    std::ifstream(port_file) >> port;
    std::string url = "http://127.0.0.1:" + port;
    std::string env = "KBENCH_DATASETS_DIR=" + quote((dir_ / "datasets").string()) +
                      " HF_HUB_CACHE=" + quote((dir_ / "no-hub").string()) +
                      " KBENCH_KERNELBENCH_URL=";
    std::string list = " " + quote(KBENCH_BINARY) +
                       " dataset list --dataset kernelbench --python " + quote(KBENCH_TEST_PYTHON);
    auto first = run_command(env + quote(url) + list);
    ::kill(server, SIGTERM);
    EXPECT_EQ(first.exit_code, 0) << first.err;
    EXPECT_NE(first.err.find("downloading KernelBench's problem set from " + url),
              std::string::npos)
        << first.err;
    EXPECT_NE(first.out.find("6 problem(s) in kernelbench"), std::string::npos) << first.out;
    EXPECT_TRUE(
        fs::exists(dir_ / "datasets" / "kernelbench" / "data" / "level_3-00000-of-00001.parquet"));
    // The server is gone: the cache answers.
    auto again = run_command(env + quote(url) + list);
    EXPECT_EQ(again.exit_code, 0) << again.err;
    EXPECT_EQ(again.err.find("downloading"), std::string::npos) << again.err;
    EXPECT_NE(again.out.find("6 problem(s) in kernelbench"), std::string::npos) << again.out;
    // Offline with nothing kept: what to fetch, and where.
    std::string offline = "KBENCH_DATASETS_DIR=" + quote((dir_ / "empty").string()) +
                          " HF_HUB_CACHE=" + quote((dir_ / "no-hub").string()) +
                          " KBENCH_KERNELBENCH_URL=http://127.0.0.1:9";
    auto none = run_command(offline + list);
    EXPECT_EQ(none.exit_code, 2);
    EXPECT_NE(none.err.find("could not be downloaded"), std::string::npos) << none.err;
    EXPECT_NE(none.err.find("into " + (dir_ / "empty" / "kernelbench" / "data").string()),
              std::string::npos)
        << none.err;
    EXPECT_NE(none.err.find("http://127.0.0.1:9/data/level_2-00000-of-00001.parquet"),
              std::string::npos)
        << none.err;
}

// --- 5. Problems that do not exist, and names kbench cannot read ------------------------------

TEST_F(Errors, AProblemThatDoesNotExistNamesWhatExists) {
    std::string root = kernelbench_tree("KernelBench");
    const std::string hint =
        "name one that exists, as in 1/1, or list them: kbench dataset list --dataset " + root;
    for (const char* sub : {"show", "list"}) {
        auto r = dataset(sub, root, {"9/999"});
        EXPECT_EQ(r.exit_code, 2) << sub;
        EXPECT_EQ(r.err, usage_error("no problem '9/999' in " + root +
                                         ": it holds level 1 (ids 1-2) and level 2 (id 1)",
                                     hint))
            << sub;
    }
    auto in_level = dataset("show", root, {"level1/999"});
    EXPECT_EQ(in_level.exit_code, 2);
    EXPECT_EQ(
        in_level.err,
        usage_error("no problem 'level1/999' in " + root + ": its level 1 holds ids 1-2", hint));
    auto by_name = dataset("show", root, {"19_ReLU"});
    EXPECT_EQ(by_name.exit_code, 2);
    EXPECT_EQ(by_name.err, usage_error("no problem '19_ReLU' in " + root +
                                           ": it holds level 1 (ids 1-2) and level 2 (id 1)",
                                       hint));
    auto two = dataset("show", root, {"1"});
    EXPECT_EQ(two.exit_code, 2);
    EXPECT_EQ(two.err, usage_error("'1' names 2 problems of " + root + ": 1/1, 2/1",
                                   "add the level, as in 1/1"));
    auto selected = dataset("list", root, {"--level", "9", "--problems", "999"});
    EXPECT_EQ(selected.exit_code, 2);
    EXPECT_EQ(selected.err,
              usage_error("no problem of " + root +
                              " matches --level 9 --problems 999: it "
                              "holds level 1 (ids 1-2) and level 2 (id 1)",
                          "choose among those, or list them with: kbench dataset list "
                          "--dataset " +
                              root));
    auto listed_ok = dataset("list", root, {"--json", "2/1", "1_A"});
    EXPECT_EQ(listed_ok.exit_code, 0) << listed_ok.err;
    EXPECT_EQ(listed(listed_ok), (std::vector<std::string>{"1/1 1_A", "2/1 1_C"}));
}

TEST_F(Errors, AMalformedProblemNameSaysWhichFormsAreRead) {
    std::string root = kernelbench_tree("KernelBench");
    const std::string forms =
        "name it as LEVEL/ID (1/19), LEVEL/NAME (1/19_ReLU) or NAME (19_ReLU)";
    for (const std::string bad : {"abc/1", "1/", "1/2/3", "/19"}) {
        for (const char* sub : {"show", "list"}) {
            auto r = dataset(sub, root, {bad});
            EXPECT_EQ(r.exit_code, 2) << sub << " " << bad;
            EXPECT_EQ(r.err, usage_error("cannot read '" + bad + "' as a problem", forms))
                << sub << " " << bad;
        }
    }
    auto ranges = dataset("list", root, {"--problems", "9/999"});
    EXPECT_EQ(ranges.exit_code, 2);
    EXPECT_EQ(ranges.err,
              usage_error("cannot read '9/999' in --problems 9/999: --problems takes ids, not "
                          "LEVEL/ID",
                          "give the level apart: --level 9 --problems 999"));
    auto words = dataset("list", root, {"--problems", "abc"});
    EXPECT_EQ(words.exit_code, 2);
    EXPECT_EQ(words.err, usage_error("cannot read 'abc' in --problems abc",
                                     "give ids and ranges like 1-10,19"));
}

}  // namespace
