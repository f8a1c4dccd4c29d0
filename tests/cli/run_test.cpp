// kbench eval as a user runs it, on device cpu: interruption, one writer per run, honest
// denominators, KernelBench's result files, exit codes and the errors a user meets first.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <map>
#include <regex>
#include <set>
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

const char* kRelu =
    "import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n"
    "        return torch.relu(x)\ndef get_inputs():\n    return [torch.randn(16, 16)]\n"
    "def get_init_inputs():\n    return []\n";
const char* kHonest =
    "import torch\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n"
    "        return torch.relu(x)\n";
// Honest, but slow to load: an interruption lands while it is being evaluated.
const char* kSlow =
    "import time\nimport torch\nclass ModelNew(torch.nn.Module):\n    def __init__(self):\n"
    "        super().__init__()\n        time.sleep(5)\n    def forward(self, x):\n"
    "        return torch.relu(x)\n";
const char* kRaisesAtImport =
    "import torch\nraise RuntimeError('no kernel today')\nclass ModelNew(torch.nn.Module):\n"
    "    pass\n";
const char* kWrong =
    "import torch\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n"
    "        return torch.relu(x) + 1\n";

std::string shell(const std::vector<std::string>& args) {
    std::string line;
    for (const auto& a : args) line += quote(a) + " ";
    return line;
}

// A problem set of n ReLU problems, level 1, ids 1..n, named "<id>_relu".
fs::path write_problems(const fs::path& dir, int n) {
    fs::path file = dir / "problems.jsonl";
    std::ofstream out(file);
    for (int id = 1; id <= n; ++id)
        out << json{{"code", kRelu},
                    {"level", 1},
                    {"name", std::to_string(id) + "_relu"},
                    {"problem_id", id}}
                   .dump()
            << "\n";
    return file;
}

void write_candidate(const fs::path& dir, int problem, int sample, const std::string& code) {
    fs::create_directories(dir);
    std::ofstream(dir / ("level_1_problem_" + std::to_string(problem) + "_sample_" +
                         std::to_string(sample) + "_kernel.py"))
        << code;
}

std::vector<std::string> eval_args(const fs::path& dir, const std::string& run,
                                   const fs::path& candidates) {
    return {KBENCH_BINARY,   "eval",
            "--device",      "cpu",
            "--policy",      "permissive",
            "--python",      KBENCH_TEST_PYTHON,
            "--dataset",     (dir / "problems.jsonl").string(),
            "--candidates",  candidates.string(),
            "--runs-dir",    (dir / "runs").string(),
            "--run",         run,
            "--cache-dir",   KBENCH_TEST_CACHE,
            "--max-seconds", "0.5"};
}

// Rows of the attempts table (key -> count) of a run's database, read without kbench's store.
std::map<std::string, int> attempts(const fs::path& db) {
    std::map<std::string, int> out;
    if (!fs::exists(db)) return out;
    sqlite3* handle = nullptr;
    if (sqlite3_open_v2(db.c_str(), &handle, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
        sqlite3_close(handle);
        return out;
    }
    sqlite3_busy_timeout(handle, 5000);
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(handle, "SELECT key, count FROM attempts", -1, &s, nullptr) == SQLITE_OK)
        while (sqlite3_step(s) == SQLITE_ROW)
            out[reinterpret_cast<const char*>(sqlite3_column_text(s, 0))] =
                sqlite3_column_int(s, 1);
    sqlite3_finalize(s);
    sqlite3_close(handle);
    return out;
}

// Waits until the run's database records an evaluation under way; false after the deadline or
// when the process ended.
bool wait_for_attempt(pid_t pid, const fs::path& db) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(5);
    while (std::chrono::steady_clock::now() < deadline) {
        if (kbench::sandbox::try_wait_process(pid)) return false;
        for (const auto& [key, count] : attempts(db))
            if (count > 0) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
}

struct Finished {
    int exit_code = -1;
    std::string err;
};

// How the interruption is sent: to the process group, as a terminal's Ctrl-C is; or by kbench's
// parent the way coreutils' `timeout -s SIGNAL` sends it (to kbench, then SIGCONT, then the same
// to its process group, then SIGCONT again).
enum class Sent { to_group, like_timeout };

// Runs args with stderr in a file; signal one second after an evaluation begins, if signal is
// not 0.
Finished run_and_signal(const std::vector<std::string>& args, const fs::path& db, int signal,
                        const fs::path& err_file, Sent sent = Sent::to_group) {
    int err = ::open(err_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    kbench::sandbox::SpawnSpec spec;
    spec.argv = args;
    spec.stderr_fd = err;
    spec.stdout_fd = err;
    pid_t pid = kbench::sandbox::spawn_process(spec);
    ::close(err);
    Finished f;
    if (signal) {
        EXPECT_TRUE(wait_for_attempt(pid, db)) << "no evaluation began";
        std::this_thread::sleep_for(std::chrono::seconds(1));
        if (sent == Sent::to_group) {
            ::kill(-pid, signal);
        } else {
            for (pid_t to : {pid, -pid}) {
                ::kill(to, signal);
                ::kill(to, SIGCONT);
            }
        }
    }
    auto status = kbench::sandbox::wait_process(pid);
    f.exit_code = status.exited ? status.code : 128 + status.signal;
    std::ifstream in(err_file);
    f.err.assign(std::istreambuf_iterator<char>(in), {});
    return f;
}

std::map<int, kbench::store::StoredVerdict> by_problem(const fs::path& db) {
    std::map<int, kbench::store::StoredVerdict> out;
    for (auto& r : kbench::store::open_sqlite_store(db)->all()) out[r.problem_id] = r;
    return out;
}

TEST(Run, InterruptionsStopCleanlyAndNeverCountAgainstTheCandidate) {
    fs::path dir = kbench::make_temp_dir("kbench-test-run-int-");
    write_problems(dir, 2);
    write_candidate(dir / "cands", 1, 0, kSlow);
    write_candidate(dir / "cands", 2, 0, kHonest);
    auto args = eval_args(dir, "int", dir / "cands");
    args.push_back("--no-timing");  // timing on a busy machine is not what this is about
    fs::path db = dir / "runs" / "int" / "kbench.db";

    // Three times interrupted while the slow candidate loads: SIGINT, SIGTERM, and SIGINT sent
    // by kbench's parent as `timeout -s INT` sends it (a scheduler's or a shell's is the same).
    for (auto [signal, sent] :
         {std::pair{SIGINT, Sent::to_group}, std::pair{SIGTERM, Sent::to_group},
          std::pair{SIGINT, Sent::like_timeout}}) {
        Finished f = run_and_signal(args, db, signal, dir / "err.txt", sent);
        EXPECT_EQ(f.exit_code, 128 + signal) << f.err;
        EXPECT_NE(f.err.find("interrupted"), std::string::npos) << f.err;
        EXPECT_NE(f.err.find("to resume: "), std::string::npos) << f.err;
        EXPECT_EQ(f.err.find("could not be verified"), std::string::npos) << f.err;
        EXPECT_TRUE(fs::exists(dir / "runs" / "int" / "verdicts.jsonl")) << f.err;
        // The attempt it began was taken back.
        for (const auto& [key, count] : attempts(db)) EXPECT_EQ(count, 0) << key;
        auto stored = by_problem(db);
        if (stored.count(1))
            ADD_FAILURE() << "a verdict for the interrupted candidate: " << stored[1].status;
    }
    // No process of the interrupted runs is left (the workers ended with kbench).
    kbench::test::CommandResult left;
    for (int i = 0; i < 50; ++i) {
        left = kbench::test::run_command("pgrep -f '[k]bench_worker' || true");
        if (left.out.empty()) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    EXPECT_EQ(left.out, "") << "workers outlived an interrupted run";

    // The same command again: the candidate's own verdict.
    Finished f = run_and_signal(args, db, 0, dir / "err.txt");
    ASSERT_EQ(f.exit_code, 0) << f.err;
    auto stored = by_problem(db);
    ASSERT_EQ(stored.size(), 2u);
    EXPECT_EQ(stored[1].status, "correct") << stored[1].verdict.dump();
    EXPECT_EQ(stored[2].status, "correct");
    fs::remove_all(dir);
}

TEST(Run, ASecondWriterIsRefusedWithTheHoldersPidAndKillNineFreesTheRun) {
    fs::path dir = kbench::make_temp_dir("kbench-test-run-lock-");
    write_problems(dir, 1);
    write_candidate(dir / "cands", 1, 0, kSlow);
    auto args = eval_args(dir, "lock", dir / "cands");
    args.push_back("--no-timing");
    fs::path db = dir / "runs" / "lock" / "kbench.db";
    pid_t first = kbench::sandbox::spawn_process({args});
    ASSERT_TRUE(wait_for_attempt(first, db));

    auto second = kbench::test::run_command(shell(args));
    EXPECT_EQ(second.exit_code, 2) << second.err;
    EXPECT_NE(second.err.find("in use by another kbench (pid " + std::to_string(first) + ")"),
              std::string::npos)
        << second.err;
    EXPECT_NE(second.err.find("what to do:"), std::string::npos) << second.err;

    ::kill(first, SIGKILL);  // the lock dies with its holder
    kbench::sandbox::wait_process(first);
    auto third = kbench::test::run_command(shell(args));
    EXPECT_EQ(third.exit_code, 0) << third.err;
    EXPECT_EQ(by_problem(db)[1].status, "correct");
    fs::remove_all(dir);
}

// On the CPU the first problem's candidate is evaluated before the others are built: the first
// verdict comes after one build, not after all of them.
TEST(Run, OnTheCpuTheFirstProblemIsEvaluatedBeforeTheRestIsBuilt) {
    fs::path dir = kbench::make_temp_dir("kbench-test-run-first-");
    write_problems(dir, 3);
    // A candidate that is built (the suite's C++ ReLU), a different source for each problem.
    std::string built_relu = kbench::read_file(
        fs::path(KBENCH_SOURCE_DIR) / "suite/candidates/cpu/level_1_problem_1_sample_0_kernel.py");
    for (int id = 1; id <= 3; ++id)
        write_candidate(dir / "cands", id, 0, built_relu + "# " + std::to_string(id) + "\n");
    auto args = eval_args(dir, "first", dir / "cands");
    args.insert(args.end(), {"--no-timing", "-v"});
    // A cache of its own: every candidate is built in this run.
    *std::next(std::find(args.begin(), args.end(), "--cache-dir")) = (dir / "cache").string();
    auto r = kbench::test::run_command(shell(args));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    std::size_t evaluated = r.err.find("evaluating level_1_problem_1_sample_0_kernel.py");
    std::size_t built = r.err.find("building level_1_problem_2_sample_0_kernel.py");
    ASSERT_NE(evaluated, std::string::npos) << r.err;
    ASSERT_NE(built, std::string::npos) << r.err;
    EXPECT_LT(evaluated, built) << r.err;
    fs::remove_all(dir);
}

// A command on part of a run (--problems) writes the run's files for the whole run, as
// kbench score --run counts it.
TEST(Run, TheRunsFilesDescribeTheWholeRunAsScoreDoes) {
    fs::path dir = kbench::make_temp_dir("kbench-test-run-whole-");
    write_problems(dir, 4);
    for (int id = 1; id <= 4; ++id)
        write_candidate(dir / "cands", id, 0, id == 3 ? kWrong : kHonest);
    auto args = eval_args(dir, "whole", dir / "cands");
    args.push_back("--no-timing");
    auto all = kbench::test::run_command(shell(args));
    ASSERT_EQ(all.exit_code, 1) << all.err;
    args.insert(args.end(), {"--problems", "2,4"});
    auto part = kbench::test::run_command(shell(args));
    EXPECT_EQ(part.exit_code, 1) << part.err;  // the run holds an incorrect one
    fs::path run = dir / "runs" / "whole";
    std::set<int> lines;
    for (const json& v : kbench::test::json_lines(kbench::read_file(run / "verdicts.jsonl")))
        lines.insert(v["problem"]["id"].get<int>());
    EXPECT_EQ(lines, (std::set<int>{1, 2, 3, 4}));
    json results = json::parse(std::ifstream(run / "eval_results.json"));
    for (const char* id : {"1", "2", "3", "4"}) EXPECT_TRUE(results.contains(id)) << id;
    auto score = kbench::test::run_command(
        shell({KBENCH_BINARY, "score", "--run", "whole", "--runs-dir", (dir / "runs").string()}));
    ASSERT_EQ(score.exit_code, 0) << score.err;
    std::regex four(R"(\n1\s+4\s+4\s+75\.0%)");  // level 1: 4 problems, 4 candidates, 75% correct
    EXPECT_TRUE(std::regex_search(score.out, four)) << score.out;
    EXPECT_NE(part.out.find("4 problems, 4 candidates"), std::string::npos) << part.out;
    fs::remove_all(dir);
}

TEST(Run, EveryProblemCountsAndTheResultsAreKernelBenchsOwn) {
    fs::path dir = kbench::make_temp_dir("kbench-test-run-den-");
    write_problems(dir, 5);
    fs::path cands = dir / "cands";
    write_candidate(cands, 1, 0, kHonest);
    write_candidate(cands, 1, 1, kWrong);
    fs::create_directories(cands);
    fs::create_symlink(dir / "nowhere.py", cands / "level_1_problem_2_sample_0_kernel.py");
    // problem 3: no candidate at all
    write_candidate(cands, 4, 0, kRaisesAtImport);
    write_candidate(cands, 5, 0, kWrong);
    write_candidate(cands, 9, 0, kHonest);  // not in the dataset
    auto args = eval_args(dir, "den", cands);
    auto r = kbench::test::run_command(shell(args));
    EXPECT_EQ(r.exit_code, 1) << r.err;

    // Named in the log: what was skipped, and the problems without a candidate.
    EXPECT_NE(r.err.find("level_1_problem_2_sample_0_kernel.py: dangling link to"),
              std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find("level_1_problem_9_sample_0_kernel.py: not in the dataset"),
              std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find("problem 3 (3_relu) has no usable candidate (missing)"), std::string::npos)
        << r.err;
    // Progress lines name the problem and the candidate.
    EXPECT_NE(r.err.find("level 1 problem 5 (5_relu), sample 0 "
                         "(level_1_problem_5_sample_0_kernel.py): incorrect"),
              std::string::npos)
        << r.err;
    // The summary: 5 problems, 1 correct.
    EXPECT_NE(r.out.find("5 problems, 4 candidates"), std::string::npos) << r.out;
    EXPECT_TRUE(std::regex_search(r.out, std::regex(R"(fast_0\s+20\.0%)"))) << r.out;
    EXPECT_NE(r.out.find("no usable candidate for 2 problem(s) (1 dangling link, 1 missing)"),
              std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find("compiled 2, correct 1"), std::string::npos) << r.out;
    fs::path run = dir / "runs" / "den";
    EXPECT_NE(r.out.find((run / "level1" / "eval_results.json").string()), std::string::npos);
    EXPECT_NE(r.out.find((run / "verdicts.jsonl").string()), std::string::npos);
    std::regex row(R"(1\s+1_relu\s+2\s+correct\s+\S+x\s+level_1_problem_1_sample_0_kernel.py)");
    EXPECT_TRUE(std::regex_search(r.out, row)) << r.out;

    // eval_results.json as KernelBench writes it.
    json results = json::parse(std::ifstream(run / "eval_results.json"));
    ASSERT_TRUE(results.contains("1") && results.contains("4") && results.contains("5"));
    EXPECT_FALSE(results.contains("2"));
    for (const auto& e : results["1"]) {
        if (!e["correctness"].get<bool>()) continue;
        const json& stats = e["runtime_stats"];
        for (const char* key : {"mean", "std", "min", "max", "num_trials", "hardware", "device"})
            EXPECT_TRUE(stats.contains(key)) << key;
        EXPECT_DOUBLE_EQ(e["runtime"].get<double>(), stats["mean"].get<double>());
        EXPECT_DOUBLE_EQ(e["ref_runtime"].get<double>(),
                         e["ref_runtime_stats"]["mean"].get<double>());
    }
    const json& raised = results["4"][0];
    EXPECT_FALSE(raised["compiled"].get<bool>()) << raised.dump();
    EXPECT_EQ(raised["metadata"].value("compilation_error_name", ""), "builtins.RuntimeError");
    EXPECT_NE(raised["metadata"].value("compilation_error", "").find("no kernel today"),
              std::string::npos);
    const json& wrong = results["5"][0];
    EXPECT_TRUE(wrong["compiled"].get<bool>());
    EXPECT_EQ(wrong["metadata"].value("correctness_issue_name", ""), "correctness_issue");
    EXPECT_EQ(wrong["runtime"].get<double>(), -1.0);

    // KernelBench's analysis on the same folder (its rules, tests/python/kernelbench_analysis.py)
    // against a baseline file of the verdicts' own baseline means.
    json baseline = {{"level1", json::object()}};
    for (int id = 1; id <= 5; ++id)
        baseline["level1"][std::to_string(id) + "_relu.py"] = {{"mean", 1.0}};
    baseline["level1"]["1_relu.py"]["mean"] = results["1"][0]["ref_runtime"];
    std::ofstream(dir / "baseline.json") << baseline.dump();
    auto analysis = kbench::test::run_command(shell(
        {KBENCH_TEST_PYTHON,
         std::string(KBENCH_SOURCE_DIR) + "/tests/python/kernelbench_analysis.py", "--eval-results",
         (run / "eval_results.json").string(), "--baseline", (dir / "baseline.json").string(),
         "--level", "1", "--problems-jsonl", (dir / "problems.jsonl").string()}));
    ASSERT_EQ(analysis.exit_code, 0) << analysis.err;
    json kb = json::parse(analysis.out);
    EXPECT_EQ(kb["total_count"], 5);
    EXPECT_EQ(kb["compiled_count"], 2);
    EXPECT_EQ(kb["correct_count"], 1);
    EXPECT_DOUBLE_EQ(kb["correctness_rate"].get<double>(), 0.2);  // kbench's fast_0 above
    // kbench's own KernelBench view with the same baseline file gives the same numbers.
    auto view = args;
    view.insert(view.end(), {"--kernelbench-baseline", (dir / "baseline.json").string(), "-q"});
    auto again = kbench::test::run_command(shell(view));
    EXPECT_EQ(again.exit_code, 1) << again.err;
    char expected[200];
    std::snprintf(expected, sizeof expected,
                  "level 1: 3/5 problems evaluated, compiled 2, correct 1; 5 with a baseline; "
                  "geomean speedup %.3fx; fast_0 %.1f%%",
                  kb["geo_mean_speedup"].get<double>(), 100 * kb["fast_p"]["0.0"].get<double>());
    EXPECT_NE(again.out.find(expected), std::string::npos) << again.out << "\nwanted: " << expected;
    fs::remove_all(dir);
}

TEST(Run, ExitCodesAndOneLineErrors) {
    fs::path dir = kbench::make_temp_dir("kbench-test-run-exit-");
    write_problems(dir, 1);
    write_candidate(dir / "good", 1, 0, kHonest);
    write_candidate(dir / "bad", 1, 0, kWrong);
    auto args = eval_args(dir, "good", dir / "good");
    args.push_back("-q");
    auto good = kbench::test::run_command(shell(args));
    EXPECT_EQ(good.exit_code, 0) << good.err;

    // --json on a finished run prints its verdicts.
    auto json_args = args;
    json_args.push_back("--json");
    auto listed = kbench::test::run_command(shell(json_args));
    EXPECT_EQ(listed.exit_code, 0);
    ASSERT_EQ(std::count(listed.out.begin(), listed.out.end(), '\n'), 1) << listed.out;
    EXPECT_EQ(json::parse(listed.out)["status"], "correct");

    // Other settings under the same run name: refused, not mixed.
    auto other = args;
    other.insert(other.end(), {"--trials", "3"});
    auto refused = kbench::test::run_command(shell(other));
    EXPECT_EQ(refused.exit_code, 2);
    EXPECT_NE(refused.err.find("was made with other settings (they differ in trials)"),
              std::string::npos)
        << refused.err;

    auto bad =
        kbench::test::run_command(shell(eval_args(dir, "bad", dir / "bad")) + " -q --no-timing");
    EXPECT_EQ(bad.exit_code, 1) << bad.err;
    EXPECT_TRUE(std::regex_search(bad.out, std::regex(R"(fast_1\s+n/a)"))) << bad.out;

    // Nothing usable: the error says what it found and skipped.
    fs::create_directories(dir / "links");
    for (int id : {1, 2})
        fs::create_symlink(
            dir / "gone.py",
            dir / "links" / ("level_1_problem_" + std::to_string(id) + "_sample_0_kernel.py"));
    auto none = kbench::test::run_command(shell(eval_args(dir, "links", dir / "links")) + " -q");
    EXPECT_EQ(none.exit_code, 2);
    EXPECT_NE(none.err.find("found 2 candidate file(s), skipped 2 dangling link"),
              std::string::npos)
        << none.err;

    // Usage errors: one line and what to do, exit 2, no run folder left behind.
    auto judges = eval_args(dir, "judges", dir / "good");
    judges.insert(judges.end(), {"--cpu-judges", "0"});
    auto j = kbench::test::run_command(shell(judges));
    EXPECT_EQ(j.exit_code, 2);
    EXPECT_NE(j.err.find("must be a whole number, 1 or more (got '0')"), std::string::npos)
        << j.err;
    EXPECT_EQ(j.err.find("e+308"), std::string::npos) << j.err;

    std::ofstream(dir / "a-file") << "x";
    auto unwritable = eval_args(dir, "x", dir / "good");
    unwritable[std::find(unwritable.begin(), unwritable.end(), "--runs-dir") - unwritable.begin() +
               1] = (dir / "a-file" / "runs").string();
    auto u = kbench::test::run_command(shell(unwritable));
    EXPECT_EQ(u.exit_code, 2);
    EXPECT_NE(u.err.find("cannot write the run folder"), std::string::npos) << u.err;
    EXPECT_EQ(u.err.find("internal error"), std::string::npos) << u.err;

    auto gpus = eval_args(dir, "gpus", dir / "good");
    gpus[3] = "auto";  // --device auto, on this machine without a GPU
    gpus.insert(gpus.end(), {"--gpus", "0"});
    auto g = kbench::test::run_command(shell(gpus));
    if (g.err.find("no GPU is visible") != std::string::npos || g.exit_code != 0) {
        EXPECT_EQ(g.exit_code, 2) << g.err;
        EXPECT_NE(g.err.find("--gpus 0: no GPU is visible on this machine"), std::string::npos)
            << g.err;
        EXPECT_FALSE(fs::exists(dir / "runs" / "gpus"));
    }
    fs::remove_all(dir);
}

// The run's folder on a small filesystem of its own (a tmpfs in a mount namespace of the
// test's): a start with too little free space is refused with what to do; a disk that fills
// while kbench runs stops it with kbench's error (no crash), the verdicts stored before it are
// kept, and the same command resumes once there is space again.
TEST(Run, AFullDiskStopsTheRunCleanlyAndTheSameCommandResumes) {
    if (kbench::test::run_command("unshare --mount --propagation private true").exit_code != 0)
        GTEST_SKIP() << "no mount namespace for the test's own small filesystem here";
    fs::path dir = kbench::make_temp_dir("kbench-test-run-disk-");
    write_problems(dir, 3);
    write_candidate(dir / "cands", 1, 0, kHonest);
    write_candidate(dir / "cands", 2, 0, kSlow);
    // Not the first one's code: the same problem and code would be the same verdict.
    write_candidate(dir / "cands", 3, 0, std::string(kHonest) + "# the third\n");
    auto args = eval_args(dir, "disk", dir / "cands");
    args.push_back("--no-timing");
    fs::path runs = dir / "runs";
    fs::create_directories(runs);
    std::string count = std::string(KBENCH_TEST_PYTHON) +
                        " -c \"import sqlite3, sys; print(sqlite3.connect('file:" +
                        (runs / "disk" / "kbench.db").string() +
                        "?mode=ro', uri=True).execute('select count(*) from verdicts')"
                        ".fetchone()[0])\" 2>/dev/null";
    auto keep = [&](const std::string& name) {
        return "cp -a " + quote((runs / "disk").string()) + " " + quote((dir / name).string()) +
               "\n";
    };
    std::string script = "mount -t tmpfs -o size=100m kbench-test " + quote(runs.string()) +
                         " || exit 99\n" + shell(args) + " > " +
                         quote((dir / "small.txt").string()) +
                         " 2>&1; echo small $?\n"
                         "umount " +
                         quote(runs.string()) + "\n" + "mount -t tmpfs -o size=600m kbench-test " +
                         quote(runs.string()) + " || exit 99\n" + shell(args) + " > " +
                         quote((dir / "first.txt").string()) + " 2>&1 &\n" +
                         "pid=$!\n"
                         "until [ \"$(" +
                         count +
                         ")\" -ge 1 ] 2>/dev/null; do\n"
                         "  kill -0 $pid 2>/dev/null || break; sleep 0.1\n"
                         "done\n"
                         "dd if=/dev/zero of=" +
                         quote((runs / "ballast").string()) +
                         " bs=1M 2>/dev/null\n"
                         "wait $pid; echo first $?\n" +
                         keep("after-first") + "rm " + quote((runs / "ballast").string()) + "\n" +
                         shell(args) + " > " + quote((dir / "second.txt").string()) +
                         " 2>&1; echo second $?\n" + keep("after-second");
    std::ofstream(dir / "disk.sh") << script;
    auto r = kbench::test::run_command("unshare --mount --propagation private sh " +
                                       quote((dir / "disk.sh").string()));
    ASSERT_NE(r.exit_code, 99) << r.err;
    std::string small = kbench::read_file(dir / "small.txt");
    std::string first = kbench::read_file(dir / "first.txt");
    std::string second = kbench::read_file(dir / "second.txt");
    // Refused at the start: less than kbench needs free.
    EXPECT_NE(r.out.find("small 2\n"), std::string::npos) << r.out << small;
    EXPECT_NE(small.find("MiB free; kbench needs at least 512 MiB there"), std::string::npos)
        << small;
    EXPECT_NE(small.find("what to do: free space there"), std::string::npos) << small;
    // Full while it runs: kbench's own error, exit 2; the verdicts stored before it are kept,
    // none for the candidate under way (the slow one).
    EXPECT_NE(r.out.find("first 2\n"), std::string::npos) << r.out << first;
    EXPECT_NE(first.find("disk is full"), std::string::npos) << first;
    EXPECT_NE(first.find("what to do: free space"), std::string::npos) << first;
    EXPECT_EQ(first.find("terminate"), std::string::npos) << first;
    EXPECT_EQ(first.find("internal error"), std::string::npos) << first;
    auto kept = by_problem(dir / "after-first" / "kbench.db");
    EXPECT_GE(kept.size(), 1u);
    EXPECT_EQ(kept.count(2), 0u) << kept[2].verdict.dump();
    for (const auto& [problem, v] : kept) EXPECT_EQ(v.status, "correct") << problem;
    // Resumed: the rest, all correct, the kept ones not evaluated again.
    EXPECT_NE(r.out.find("second 0\n"), std::string::npos) << r.out << second;
    EXPECT_NE(second.find(std::to_string(kept.size()) + " already done"), std::string::npos)
        << second;
    auto all = by_problem(dir / "after-second" / "kbench.db");
    ASSERT_EQ(all.size(), 3u) << second;
    for (const auto& [problem, v] : all) EXPECT_EQ(v.status, "correct") << problem;
    fs::remove_all(dir);
}

TEST(Run, ABusyMachineNeverRejectsAnHonestCandidate) {
    // CPU-bound processes beside kbench, more than the machine has cores: the judge's clock runs
    // past the claims at times, and the sandbox and the judge wait for a CPU. That costs an
    // honest candidate its claims on those requests (the clock's time counts), never its verdict.
    unsigned cores = std::max(1u, std::thread::hardware_concurrency());
    std::vector<pid_t> burners;
    for (unsigned i = 0; i < cores + 1; ++i) {
        pid_t pid = ::fork();
        if (pid == 0) {
            ::alarm(600);
            std::atomic<unsigned long> n{0};
            for (;;) n.fetch_add(1, std::memory_order_relaxed);
        }
        burners.push_back(pid);
    }
    fs::path dir = kbench::make_temp_dir("kbench-test-run-busy-");
    write_problems(dir, 3);
    for (int id = 1; id <= 3; ++id) write_candidate(dir / "good", id, 0, kHonest);
    auto args = eval_args(dir, "busy", dir / "good");
    args.insert(args.end(), {"--json", "-q"});
    auto r = kbench::test::run_command(shell(args));
    for (pid_t pid : burners) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, nullptr, 0);
    }
    std::vector<json> verdicts = kbench::test::json_lines(r.out);
    ASSERT_EQ(verdicts.size(), 3u) << r.out << r.err;
    for (const json& v : verdicts) EXPECT_EQ(v["status"], "correct") << v.dump(2);
    fs::remove_all(dir);
}

TEST(Run, AReferenceWithoutGetInputsIsTheReferencesFaultNotTheCandidates) {
    fs::path dir = kbench::make_temp_dir("kbench-test-run-ref-");
    std::ofstream(dir / "ref.py") << "import torch\nclass Model(torch.nn.Module):\n"
                                     "    def forward(self, x):\n        return x\n"
                                     "def get_init_inputs():\n    return []\n";
    std::ofstream(dir / "cand.py") << kHonest;
    auto r = kbench::test::run_command(
        shell({KBENCH_BINARY, "check", "--device", "cpu", "--policy", "permissive", "--python",
               KBENCH_TEST_PYTHON, "--cache-dir", KBENCH_TEST_CACHE, (dir / "ref.py").string(),
               (dir / "cand.py").string()}));
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.out.find("load_error"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("defines no get_inputs"), std::string::npos) << r.out;
    EXPECT_NE(r.err.find("the reference"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("harness failure"), std::string::npos) << "retried: " << r.err;
    fs::remove_all(dir);
}

// A candidate that sends SIGINT to kbench itself attacks the run: the run goes on, and the
// candidate is rejected for it. Confined, it cannot reach kbench; this opens the two layers
// that stop it (PID namespace, Landlock's signal scope).
TEST(Run, ASignalFromACandidateIsAnAttackNotAnInterruption) {
    fs::path dir = kbench::make_temp_dir("kbench-test-run-hostile-");
    write_problems(dir, 2);
    const char* hostile = R"PY(import os
import signal
import torch


def interrupt_kbench():
    pid = os.getppid()
    while pid > 1:
        if open(f"/proc/{pid}/comm").read().strip() == "kbench":
            os.kill(pid, signal.SIGINT)
            return
        pid = int(open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[1])


class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()
        interrupt_kbench()

    def forward(self, x):
        return torch.relu(x)
)PY";
    write_candidate(dir / "cands", 1, 0, hostile);
    write_candidate(dir / "cands", 2, 0, kHonest);
    auto args = eval_args(dir, "hostile", dir / "cands");
    args.insert(args.end(), {"--no-timing", "-q"});
    auto r =
        kbench::test::run_command("KBENCH_SANDBOX_DISABLE=pid_namespace,landlock " + shell(args));
    EXPECT_EQ(r.exit_code, 1) << r.err;
    auto stored = by_problem(dir / "runs" / "hostile" / "kbench.db");
    ASSERT_EQ(stored.size(), 2u) << r.err;
    EXPECT_EQ(stored[1].status, "rejected") << stored[1].verdict.dump();
    EXPECT_NE(stored[1].verdict.dump().find("signalled_kbench"), std::string::npos);
    EXPECT_EQ(stored[2].status, "correct");
    fs::remove_all(dir);
}

// A signal whose sender the kernel does not vouch for (queued with sigqueue, which lets the
// sender write any pid) stops the run like any interruption, but the evaluation under way keeps
// its attempt: a candidate that stops every run that way gets its crash verdict on the third.
TEST(Run, AnInterruptionKbenchCannotVouchForStillCountsTheAttempt) {
    fs::path dir = kbench::make_temp_dir("kbench-test-run-queued-");
    write_problems(dir, 2);
    const char* queued = R"PY(import ctypes
import os
import signal
import time
import torch


class _Value(ctypes.Union):
    _fields_ = [("i", ctypes.c_int), ("p", ctypes.c_void_p)]


def stop_kbench():
    pid = os.getppid()
    while pid > 1:
        if open(f"/proc/{pid}/comm").read().strip() == "kbench":
            libc = ctypes.CDLL(None, use_errno=True)
            libc.sigqueue.argtypes = [ctypes.c_int, ctypes.c_int, _Value]
            libc.sigqueue(pid, signal.SIGTERM, _Value(0))
            return
        pid = int(open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[1])


class ModelNew(torch.nn.Module):
    def forward(self, x):
        stop_kbench()
        # Still under way when kbench handles the signal, however busy the machine: a candidate
        # that returned first could have its verdict stored before that.
        time.sleep(60)
        return torch.relu(x)
)PY";
    write_candidate(dir / "cands", 1, 0, queued);
    write_candidate(dir / "cands", 2, 0, kHonest);
    auto args = eval_args(dir, "queued", dir / "cands");
    args.insert(args.end(), {"--no-timing", "-q"});
    std::string command = "KBENCH_SANDBOX_DISABLE=pid_namespace,landlock " + shell(args);
    auto first = kbench::test::run_command(command);
    EXPECT_EQ(first.exit_code, 143) << first.err;
    EXPECT_NE(first.err.find("could not be verified"), std::string::npos) << first.err;
    auto second = kbench::test::run_command(command);
    EXPECT_EQ(second.exit_code, 143) << second.err;
    auto third = kbench::test::run_command(command);
    EXPECT_EQ(third.exit_code, 1) << third.err;
    auto stored = by_problem(dir / "runs" / "queued" / "kbench.db");
    ASSERT_EQ(stored.size(), 2u) << third.err;
    EXPECT_EQ(stored[1].status, "crash");
    EXPECT_EQ(stored[2].status, "correct");
    fs::remove_all(dir);
}

}  // namespace
