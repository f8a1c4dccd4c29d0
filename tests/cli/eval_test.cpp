// kbench eval end to end on device cpu: the built-in suite, killed midway, resumed, checked row
// by row against the database and the output files.
#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "core/files.hpp"
#include "process/process.hpp"
#include "store/verdict_store.hpp"
#include "support/command.hpp"

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using kbench::test::quote;

std::vector<std::string> eval_args(const fs::path& runs) {
    return {KBENCH_BINARY,   "eval",        "--device", "cpu",   "--python",    KBENCH_TEST_PYTHON,
            "--runs-dir",    runs.string(), "--run",    "suite", "--cache-dir", KBENCH_TEST_CACHE,
            "--max-seconds", "1",           "-q"};
}

std::string shell(const std::vector<std::string>& args) {
    std::string line;
    for (const auto& a : args) line += quote(a) + " ";
    return line;
}

std::map<std::string, kbench::store::StoredVerdict> rows(const fs::path& db) {
    std::map<std::string, kbench::store::StoredVerdict> out;
    for (auto& r : kbench::store::open_sqlite_store(db)->all()) out[r.key] = r;
    return out;
}

std::size_t count_lines(const fs::path& file) {
    std::ifstream in(file);
    std::size_t n = 0;
    for (std::string line; std::getline(in, line);) n += !line.empty();
    return n;
}

TEST(Eval, KilledMidwayResumesWithoutRedoingOrDuplicating) {
    fs::path runs = kbench::make_temp_dir("kbench-test-eval-");
    fs::path db = runs / "suite" / "kbench.db";

    // 1. Start, wait for a few verdicts, kill -9 the command.
    pid_t pid = kbench::sandbox::spawn_process({eval_args(runs)});
    auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(15);
    std::size_t seen = 0;
    while (std::chrono::steady_clock::now() < deadline) {
        if (auto done = kbench::sandbox::try_wait_process(pid))
            FAIL() << "finished before the kill";
        if (fs::exists(db) && (seen = rows(db).size()) >= 3) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    ASSERT_GE(seen, 3u) << "no verdicts within the time limit";
    ::kill(pid, SIGKILL);
    kbench::sandbox::wait_process(pid);
    auto before = rows(db);
    ASSERT_LT(before.size(), 13u) << "the run finished before it was killed";

    // 2. The same command again finishes the rest.
    auto resumed = kbench::test::run_command(shell(eval_args(runs)));
    ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
    auto after = rows(db);
    ASSERT_EQ(after.size(), 13u);
    for (const auto& [key, row] : before) {
        ASSERT_TRUE(after.count(key));
        EXPECT_EQ(after[key].stored_at, row.stored_at) << "verdict " << key << " was redone";
        EXPECT_EQ(after[key].verdict, row.verdict);
    }
    std::map<std::tuple<int, int, int>, int> per_candidate;
    for (const auto& [key, row] : after) {
        EXPECT_EQ(row.status, "correct") << row.verdict.dump(2);
        EXPECT_EQ(row.verdict["status"], row.status);
        EXPECT_EQ(row.verdict["problem"]["level"], row.level);
        EXPECT_EQ(row.verdict["problem"]["id"], row.problem_id);
        ++per_candidate[{row.level, row.problem_id, row.sample_id}];
    }
    for (const auto& [candidate, count] : per_candidate) EXPECT_EQ(count, 1);

    // 3. The files agree with the database.
    fs::path run = runs / "suite";
    EXPECT_EQ(count_lines(run / "verdicts.jsonl"), 13u);
    std::size_t in_results = 0;
    for (int level : {1, 2, 3}) {
        fs::path file = run / ("level" + std::to_string(level)) / "eval_results.json";
        ASSERT_TRUE(fs::exists(file)) << file;
        json results = json::parse(std::ifstream(file));
        for (const auto& [problem, samples] : results.items()) {
            for (const auto& s : samples) {
                EXPECT_TRUE(s["correctness"].get<bool>());
                EXPECT_GT(s["runtime"].get<double>(), 0);
                ++in_results;
            }
        }
    }
    EXPECT_EQ(in_results, 13u);

    // 4. A third run has nothing to do; --force on a selection redoes just that.
    auto again = kbench::test::run_command(shell(eval_args(runs)));
    EXPECT_EQ(again.exit_code, 0);
    auto unchanged = rows(db);
    ASSERT_EQ(unchanged.size(), after.size());
    for (const auto& [key, row] : unchanged) EXPECT_EQ(row.stored_at, after[key].stored_at);
    auto args = eval_args(runs);
    args.insert(args.end(), {"--level", "1", "--problems", "1", "--force"});
    auto forced = kbench::test::run_command(shell(args));
    ASSERT_EQ(forced.exit_code, 0) << forced.err;
    auto last = rows(db);
    int redone = 0;
    for (const auto& [key, row] : last) redone += row.stored_at != after[key].stored_at;
    EXPECT_EQ(redone, 1);
    fs::remove_all(runs);
}

}  // namespace

namespace {

TEST(Eval, AReferenceThatNeedsUncachedModelFilesIsALoadErrorNamingTheModel) {
    fs::path dir = kbench::make_temp_dir("kbench-test-eval-hf-");
    const char* level4 = R"(import torch
from transformers import AutoConfig, AutoModelForCausalLM

class Model(torch.nn.Module):
    def __init__(self, model_name, config):
        super().__init__()
        self.model = AutoModelForCausalLM.from_pretrained(model_name, config=config)

    def forward(self, x):
        return self.model(x).logits

model_name = "kbench-test/tiny-model"
config = AutoConfig.from_pretrained(model_name)

def get_inputs():
    return [torch.randint(0, 100, (2, 8))]

def get_init_inputs():
    return [model_name, config]
)";
    const char* relu =
        "import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n"
        "        return torch.relu(x)\ndef get_inputs():\n    return [torch.randn(8, 8)]\n"
        "def get_init_inputs():\n    return []\n";
    const char* candidate =
        "import torch\nclass ModelNew(torch.nn.Module):\n    def __init__(self, *args):\n"
        "        super().__init__()\n    def forward(self, x):\n        return torch.relu(x)\n";
    std::ofstream(dir / "problems.jsonl")
        << json{{"code", level4}, {"level", 4}, {"name", "1_tiny"}, {"problem_id", 1}}.dump()
        << "\n"
        << json{{"code", relu}, {"level", 1}, {"name", "1_relu"}, {"problem_id", 1}}.dump() << "\n";
    std::ofstream(dir / "candidates.jsonl")
        << json{{"level", 4}, {"problem_id", 1}, {"sample_id", 0}, {"code", candidate}}.dump()
        << "\n"
        << json{{"level", 1}, {"problem_id", 1}, {"sample_id", 0}, {"code", candidate}}.dump()
        << "\n";
    auto r = kbench::test::run_command(
        shell({KBENCH_BINARY, "eval", "--policy", "permissive", "--device", "cpu", "--python",
               KBENCH_TEST_PYTHON, "--dataset", (dir / "problems.jsonl").string(), "--candidates",
               (dir / "candidates.jsonl").string(), "--runs-dir", (dir / "runs").string(),
               "--no-timing", "--json", "-q"}));
    ASSERT_EQ(r.exit_code, 2) << r.err;  // a reference failed: the harness's side, not a verdict
    std::map<int, json> by_level;
    std::istringstream lines(r.out);
    for (std::string line; std::getline(lines, line);)
        if (!line.empty()) {
            json v = json::parse(line);
            by_level[v["problem"]["level"].get<int>()] = v;
        }
    ASSERT_EQ(by_level.size(), 2u) << r.out;
    EXPECT_EQ(by_level[4]["status"], "load_error");
    EXPECT_NE(by_level[4]["reason"].get<std::string>().find("kbench-test/tiny-model"),
              std::string::npos)
        << by_level[4]["reason"];
    EXPECT_EQ(by_level[1]["status"], "correct")
        << "the run goes on past the problem it cannot load";
    fs::remove_all(dir);
}

}  // namespace

namespace {

// A candidate during which kbench keeps being killed (out of memory, say) must not stall every
// resumed run forever: the run that follows a stop evaluates it alone, and after a second stop it
// gets a crash verdict. Confined, a candidate cannot reach kbench at all, so this test opens the
// two layers that stop it (its own PID namespace, Landlock's signal scope) for the candidate to
// do the killing itself.
TEST(Eval, ACandidateThatKeepsKillingTheRunGetsACrashVerdict) {
    fs::path dir = kbench::make_temp_dir("kbench-test-eval-poison-");
    const char* relu =
        "import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n"
        "        return torch.relu(x)\ndef get_inputs():\n    return [torch.randn(8, 8)]\n"
        "def get_init_inputs():\n    return []\n";
    const char* honest =
        "import torch\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n"
        "        return torch.relu(x)\n";
    const char* poison = R"PY(import os
import signal
import torch


def kill_kbench():
    pid = os.getppid()
    while pid > 1:
        if open(f"/proc/{pid}/comm").read().strip() == "kbench":
            os.kill(pid, signal.SIGKILL)
            return
        pid = int(open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[1])


class ModelNew(torch.nn.Module):
    def forward(self, x):
        kill_kbench()
        return torch.relu(x)
)PY";
    std::ofstream(dir / "problems.jsonl")
        << json{{"code", relu}, {"level", 1}, {"name", "1_relu"}, {"problem_id", 1}}.dump() << "\n";
    std::ofstream(dir / "candidates.jsonl")
        << json{{"level", 1}, {"problem_id", 1}, {"sample_id", 0}, {"code", honest}}.dump() << "\n"
        << json{{"level", 1}, {"problem_id", 1}, {"sample_id", 1}, {"code", poison}}.dump() << "\n"
        << json{{"level", 1},
                {"problem_id", 1},
                {"sample_id", 2},
                {"code", std::string(honest) + "# another sample\n"}}
               .dump()
        << "\n";
    std::string command =
        "KBENCH_SANDBOX_DISABLE=pid_namespace,landlock " +
        shell({KBENCH_BINARY, "eval", "--policy", "permissive", "--device", "cpu", "--python",
               KBENCH_TEST_PYTHON, "--dataset", (dir / "problems.jsonl").string(), "--candidates",
               (dir / "candidates.jsonl").string(), "--runs-dir", (dir / "runs").string(), "--run",
               "poison", "--no-timing", "-q"});
    auto first = kbench::test::run_command(command);
    EXPECT_NE(first.exit_code, 0) << "the candidate was meant to kill this run";
    auto second = kbench::test::run_command(command);
    EXPECT_NE(second.exit_code, 0) << "the candidate, evaluated alone, was meant to kill this run";
    auto third = kbench::test::run_command(command);
    ASSERT_EQ(third.exit_code, 1) << third.err;  // evaluated, one not correct (the crash)

    std::map<int, kbench::store::StoredVerdict> by_sample;
    for (auto& r : kbench::store::open_sqlite_store(dir / "runs" / "poison" / "kbench.db")->all())
        by_sample[r.sample_id] = r;
    ASSERT_EQ(by_sample.size(), 3u);
    EXPECT_EQ(by_sample[0].status, "correct");
    EXPECT_EQ(by_sample[2].status, "correct");
    EXPECT_EQ(by_sample[1].status, "crash");
    std::string reason = by_sample[1].verdict.value("reason", std::string());
    EXPECT_NE(reason.find("kbench stopped 2 times"), std::string::npos) << reason;
    fs::remove_all(dir);
}

// Several judges on the CPU: each keeps to its own share of the cores (and PyTorch in its
// sandboxes uses as many threads), the work is shared, and every verdict names its judge.
TEST(Eval, CpuJudgesShareTheWorkEachOnItsOwnCores) {
    cpu_set_t set;
    CPU_ZERO(&set);
    ASSERT_EQ(::sched_getaffinity(0, sizeof(set), &set), 0);
    int cores = CPU_COUNT(&set);
    if (cores < 2) GTEST_SKIP() << "needs 2 cores for 2 CPU judges; this process may use " << cores;
    int share = cores / 2;  // the first judge may get one more on an odd count
    fs::path dir = kbench::make_temp_dir("kbench-test-eval-judges-");
    std::ofstream problems(dir / "problems.jsonl");
    std::ofstream candidates(dir / "candidates.jsonl");
    const char* ops[] = {"relu", "sigmoid", "tanh", "neg"};
    for (int p = 0; p < 4; ++p) {
        std::string op = ops[p];
        std::string code =
            "import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n"
            "        return torch." +
            op +
            "(x)\ndef get_inputs():\n"
            "    return [torch.randn(64, 64)]\ndef get_init_inputs():\n    return []\n";
        problems << json{{"code", code},
                         {"level", 1},
                         {"name", std::to_string(p + 1) + "_" + op},
                         {"problem_id", p + 1}}
                        .dump()
                 << "\n";
        for (int s = 0; s < 2; ++s) {
            std::string cand =
                "import os\nimport torch\nclass ModelNew(torch.nn.Module):\n"
                "    def forward(self, x):\n"
                "        n, t = len(os.sched_getaffinity(0)), torch.get_num_threads()\n"
                "        if n not in (" +
                std::to_string(share) + ", " + std::to_string(cores - share) +
                ") or t != n:\n"
                "            raise RuntimeError(f'sandbox on {n} cores with {t} threads')\n"
                "        return torch." +
                op + "(x)\n# sample " + std::to_string(s) + "\n";
            candidates << json{{"level", 1},
                               {"problem_id", p + 1},
                               {"sample_id", s},
                               {"code", cand}}
                              .dump()
                       << "\n";
        }
    }
    problems.close();
    candidates.close();
    auto r = kbench::test::run_command(shell({KBENCH_BINARY,  "eval",
                                              "--policy",     "permissive",
                                              "--device",     "cpu",
                                              "--cpu-judges", "2",
                                              "--python",     KBENCH_TEST_PYTHON,
                                              "--dataset",    (dir / "problems.jsonl").string(),
                                              "--candidates", (dir / "candidates.jsonl").string(),
                                              "--runs-dir",   (dir / "runs").string(),
                                              "--run",        "judges",
                                              "--no-timing",  "-v"}));
    ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
    EXPECT_NE(r.out.find("by device: cpu:0 "), std::string::npos) << r.out;
    // Each judge's next candidate has its sandbox started once the one before it has ended.
    int early = 0;
    for (std::size_t at = 0;
         (at = r.err.find("beside the end of the candidate before it", at)) != std::string::npos;
         ++at)
        ++early;
    EXPECT_GE(early, 4) << r.err;
    std::map<std::string, int> by_judge;
    auto stored = kbench::store::open_sqlite_store(dir / "runs" / "judges" / "kbench.db")->all();
    ASSERT_EQ(stored.size(), 8u);
    for (const auto& row : stored) {
        EXPECT_EQ(row.status, "correct") << row.verdict.dump(2);
        ++by_judge[row.verdict["config"].value("device", std::string())];
    }
    EXPECT_EQ(by_judge.size(), 2u);
    EXPECT_GT(by_judge["cpu:0"], 0);
    EXPECT_GT(by_judge["cpu:1"], 0);

    auto too_many = kbench::test::run_command(shell(
        {KBENCH_BINARY, "eval", "--policy", "permissive", "--device", "cpu", "--cpu-judges",
         std::to_string(cores + 1), "--python", KBENCH_TEST_PYTHON, "--dataset",
         (dir / "problems.jsonl").string(), "--candidates", (dir / "candidates.jsonl").string(),
         "--runs-dir", (dir / "runs").string(), "--run", "too-many", "-q"}));
    EXPECT_NE(too_many.exit_code, 0);
    EXPECT_NE(too_many.err.find("CPU judges need as many cores"), std::string::npos)
        << too_many.err;
    fs::remove_all(dir);
}

}  // namespace
