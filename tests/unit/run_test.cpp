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
#include "report/kernelbench_results.hpp"
#include "report/progress.hpp"
#include "report/reporter.hpp"
#include "schedule/run_plan.hpp"
#include "score/kernelbench_view.hpp"
#include "store/run_lock.hpp"
#include "store/verdict_store.hpp"

namespace kbench {
namespace {

using schedule::ItemRecord;

TEST(RunPlan, StoredVerdictsAreDoneHarnessFailuresAndAbnormalEndsAreRedone) {
    std::vector<ItemRecord> records = {
        {std::nullopt, 0},   // 0: new
        {"correct", 0},      // 1: done
        {"infra_error", 0},  // 2: kbench's own failure: again
        {std::nullopt, 1},   // 3: one abnormal end: alone, first
        {std::nullopt, 2},   // 4: two: condemned
        {"incorrect", 3},    // 5: a verdict ends the attempts
        {"infra_error", 2},  // 6: a stored infra_error ends them too
    };
    auto plan = schedule::plan_run(records, false);
    EXPECT_EQ(plan.done, (std::vector<std::size_t>{1, 5}));
    EXPECT_EQ(plan.rest, (std::vector<std::size_t>{0, 2, 6}));
    EXPECT_EQ(plan.suspects, (std::vector<std::size_t>{3}));
    ASSERT_EQ(plan.condemned.size(), 1u);
    EXPECT_EQ(plan.condemned[0], (std::pair<std::size_t, int>{4, 2}));
    EXPECT_EQ(plan.to_do(), 5u);

    auto forced = schedule::plan_run(records, true);
    EXPECT_TRUE(forced.done.empty());
    EXPECT_TRUE(forced.suspects.empty());
    EXPECT_TRUE(forced.condemned.empty());
    EXPECT_EQ(forced.rest.size(), records.size());
    EXPECT_NE(schedule::condemned_reason(2).find("stopped 2 times"), std::string::npos);
}

// Every leaf of the configuration's JSON, by dotted name.
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
        {"tf32", [](CheckConfig& c) { c.tf32 = "on"; }},
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

TEST(SqliteStore, InterruptedAttemptsAreTakenBackAndTheRunKeepsItsRecords) {
    fs::path dir = make_temp_dir("kbench-test-store-");
    auto store = store::open_sqlite_store(dir / "kbench.db");
    EXPECT_EQ(store->begin_attempt("k"), 1);
    EXPECT_EQ(store->begin_attempt("k"), 2);
    store->cancel_attempt("k");
    EXPECT_EQ(store->attempts("k"), 1);
    store->cancel_attempt("k");
    store->cancel_attempt("k");  // never below zero
    EXPECT_EQ(store->attempts("k"), 0);
    EXPECT_FALSE(store->meta("config"));
    store->set_meta("config", "{}");
    store->set_meta("config", "{\"a\":1}");
    EXPECT_EQ(store->meta("config").value_or(""), "{\"a\":1}");
    fs::remove_all(dir);
}

TEST(SqliteStore, AStoreOfAnotherVersionIsRefusedWithWhatToDo) {
    fs::path dir = make_temp_dir("kbench-test-store-");
    fs::path db = dir / "old.db";
    sqlite3* handle = nullptr;
    ASSERT_EQ(sqlite3_open(db.c_str(), &handle), SQLITE_OK);
    // What kbench wrote before stores had versions.
    sqlite3_exec(handle,
                 "CREATE TABLE verdicts (key TEXT PRIMARY KEY, level INTEGER, problem_id INTEGER,"
                 " sample_id INTEGER, status TEXT, verdict TEXT, stored_at TEXT)",
                 nullptr, nullptr, nullptr);
    sqlite3_close(handle);
    try {
        store::open_sqlite_store(db);
        FAIL() << "an unversioned store was opened";
    } catch (const UsageError& e) {
        EXPECT_NE(std::string(e.what()).find("has store version 1"), std::string::npos) << e.what();
        EXPECT_NE(e.hint().find("delete " + db.string()), std::string::npos) << e.hint();
    }
    ASSERT_EQ(sqlite3_open(db.c_str(), &handle), SQLITE_OK);
    sqlite3_exec(handle, "PRAGMA user_version = 99", nullptr, nullptr, nullptr);
    sqlite3_close(handle);
    EXPECT_THROW(store::open_sqlite_store(db), UsageError);
    fs::remove_all(dir);
}

TEST(RunLock, OneHolderAtATime) {
    fs::path dir = make_temp_dir("kbench-test-lock-");
    {
        store::RunLock first(dir);
        try {
            store::RunLock second(dir);  // another open file description: refused
            FAIL() << "two holders";
        } catch (const UsageError& e) {
            EXPECT_NE(std::string(e.what()).find("pid " + std::to_string(::getpid())),
                      std::string::npos)
                << e.what();
        }
    }
    store::RunLock again(dir);  // released with its holder
    fs::remove_all(dir);
}

TEST(KernelBenchResults, ErrorNamesAreKernelBenchs) {
    EXPECT_EQ(report::python_error_name("Traceback (most recent call last):\n  File \"x\", line 1\n"
                                        "RuntimeError: boom\n"),
              "builtins.RuntimeError");
    EXPECT_EQ(report::python_error_name("Traceback (most recent call last):\n  File \"x\"\n"
                                        "torch.OutOfMemoryError: CUDA out of memory\n"),
              "torch.OutOfMemoryError");
    EXPECT_EQ(report::python_error_name("Traceback (most recent call last):\n  ...\n"
                                        "KeyError: 'w'\n\nDuring handling of the above exception, "
                                        "another exception occurred:\n\nTraceback (most recent "
                                        "call last):\n  ...\nValueError\n"),
              "builtins.ValueError");
    EXPECT_EQ(report::python_error_name("error: identifier \"x\" is undefined"), "");
}

// tests/fixtures/analysis: KernelBench's analysis gives (on the real level-1 list) compiled 7,
// correct 6, 11 aligned, geomean 6.25 ** (1/5), fast_p 5, 5, 4, 3, 2, 1 of 11 for p = 0, 0.5,
// 0.8, 1, 1.5, 2 (tests/python/test_kernelbench_analysis.py works them out by hand).
TEST(KernelBenchView, EqualsKernelBenchsAnalysisOnItsFixture) {
    fs::path dir = fs::path(KBENCH_TEST_SOURCE_DIR) / "tests" / "fixtures" / "analysis";
    json results = json::parse(read_file(dir / "eval_results.json"));
    json baseline = json::parse(read_file(dir / "baseline.json"));
    std::vector<score::ProblemEntry> problems;
    for (int id = 1; id <= 100; ++id) problems.push_back({1, id, "p" + std::to_string(id)});
    for (const auto& [file, entry] : baseline["level1"].items()) {
        int id = std::stoi(file.substr(0, file.find('_')));
        problems[std::size_t(id - 1)].name = file.substr(0, file.size() - 3);
    }
    std::vector<Verdict> verdicts;
    for (const auto& [key, entries] : results.items())
        for (const auto& e : entries) {
            Verdict v;
            v.problem.level = 1;
            v.problem.id = std::stoi(key);
            v.candidate.sample_id = e["sample_id"].get<int>();
            bool compiled = e["compiled"].get<bool>();
            v.status = !compiled                      ? Status::compile_error
                       : e["correctness"].get<bool>() ? Status::correct
                                                      : Status::incorrect;
            double runtime = e["runtime"].get<double>();
            if (runtime > 0) {
                v.timing = TimingResult{};
                v.timing->mean_us = runtime * 1000;
            }
            verdicts.push_back(v);
        }
    auto views = score::kernelbench_view(verdicts, problems, baseline);
    ASSERT_EQ(views.size(), 1u);
    const auto& v = views[0];
    EXPECT_EQ(v.total, 100u);
    EXPECT_EQ(v.compiled, 7u);
    EXPECT_EQ(v.correct, 6u);
    EXPECT_EQ(v.aligned, 11u);
    EXPECT_NEAR(v.geomean_speedup, std::pow(6.25, 0.2), 1e-12);
    const std::map<double, double> fast = {{0.0, 5.0 / 11}, {0.5, 5.0 / 11}, {0.8, 4.0 / 11},
                                           {1.0, 3.0 / 11}, {1.5, 2.0 / 11}, {2.0, 1.0 / 11}};
    for (const auto& [p, share] : fast) EXPECT_NEAR(v.fast_p.at(p), share, 1e-12) << p;
}

Verdict verdict_for(int id, int sample, Status status, std::optional<double> speedup) {
    Verdict v;
    v.problem = {1, id, std::to_string(id) + "_relu", "sha"};
    v.candidate.path = "/runs/x/level_1_problem_" + std::to_string(id) + "_sample_" +
                       std::to_string(sample) + "_kernel.py";
    v.candidate.sample_id = sample;
    v.config = {{"measure", true}};
    v.status = status;
    v.speedup = speedup;
    if (speedup) {
        v.timing = TimingResult{};
        v.timing->mean_us = v.timing->median_us = 100 / *speedup;
        v.timing->converged = sample == 0;
        v.baseline = TimingResult{};
        v.baseline->mean_us = v.baseline->median_us = 100;
        v.baseline->converged = true;
    }
    return v;
}

TEST(Summary, ATableAProblemTheMissingOnesUnconvergedTimingsAndTheFiles) {
    report::RunOutcome o;
    o.run_dir = "/runs/x";
    o.verdicts = {verdict_for(1, 0, Status::incorrect, std::nullopt),
                  verdict_for(1, 1, Status::correct, 2.0),
                  verdict_for(2, 0, Status::compile_error, std::nullopt)};
    o.problems = {{1, 1, "1_relu"}, {1, 2, "2_relu"}, {1, 3, "3_relu"}};
    o.unanswered = {{1, 3, "3_relu", "dangling link to /x.py"}};
    o.files = {{"verdicts", "/runs/x/verdicts.jsonl"}};
    o.target_rel_halfwidth = 0.01;
    std::ostringstream out;
    report::SummaryReporter(out).finish(o);
    std::string text = out.str();
    EXPECT_NE(text.find("3 problems, 3 candidates"), std::string::npos) << text;
    EXPECT_TRUE(std::regex_search(text, std::regex(R"(fast_1\s+33\.3%)"))) << text;
    EXPECT_NE(text.find("no usable candidate for 1 problem(s) (1 dangling link)"),
              std::string::npos)
        << text;
    // The best of problem 1 is its correct sample 1; problem 3 says why it has none.
    EXPECT_TRUE(std::regex_search(
        text, std::regex(R"(1\s+1_relu\s+2\s+correct\s+2\.00x\s+level_1_problem_1_sample_1)")))
        << text;
    EXPECT_TRUE(std::regex_search(text, std::regex(R"(1\s+2_relu\s+1\s+compile_error\s+n/a)")))
        << text;
    EXPECT_TRUE(std::regex_search(
        text, std::regex(R"(1\s+3_relu\s+0\s+no candidate\s+n/a\s+dangling link to /x\.py)")))
        << text;
    // Sample 1's timing did not converge: named.
    EXPECT_NE(text.find("warning: 1 timing(s) did not converge"), std::string::npos) << text;
    EXPECT_NE(
        text.find("level 1 problem 1 (1_relu), sample 1 (level_1_problem_1_sample_1_kernel.py)"),
        std::string::npos)
        << text;
    EXPECT_NE(text.find("/runs/x/verdicts.jsonl"), std::string::npos) << text;
    // KernelBench's view counts sample 0 only: problem 1's sample 0 is wrong.
    EXPECT_NE(text.find("level 1: 2/3 problems evaluated, compiled 1, correct 0"),
              std::string::npos)
        << text;

    // Without timing: n/a, not 0%.
    for (auto& v : o.verdicts) {
        v.config["measure"] = false;
        v.timing.reset();
        v.speedup.reset();
    }
    o.timed = false;
    std::ostringstream untimed;
    report::SummaryReporter(untimed).finish(o);
    EXPECT_TRUE(std::regex_search(untimed.str(), std::regex(R"(fast_1\s+n/a)"))) << untimed.str();
    EXPECT_TRUE(std::regex_search(untimed.str(), std::regex(R"(fast_0\s+33\.3%)")))
        << untimed.str();
}

TEST(Progress, OnATerminalLogLinesClearTheStatusLineAndItComesBackBelowThem) {
    std::ostringstream out;
    {
        report::Progress progress(2, out, true);
        progress.add("correct", "level 1 problem 1 (1_relu), sample 0 (a.py): correct, 1.20x");
        report::print_line(out, "kbench [1.0 s] a log line");
        progress.add("incorrect", "level 1 problem 2 (2_relu), sample 0 (b.py): incorrect");
    }
    std::string text = out.str();
    // Each line printed while the status line is drawn starts by clearing it, and the status
    // line is drawn again after it.
    EXPECT_NE(text.find("\r\033[Kkbench [1.0 s] a log line\n1/2 done"), std::string::npos) << text;
    EXPECT_NE(text.find("\r\033[Klevel 1 problem 2 (2_relu), sample 0 (b.py): incorrect\n2/2 done"),
              std::string::npos)
        << text;
    EXPECT_EQ(text.back(), '\n');  // finished: the cursor on a fresh line
    // With nothing drawn (not a terminal) a log line is just a line.
    std::ostringstream plain;
    report::print_line(plain, "x");
    EXPECT_EQ(plain.str(), "x\n");
}

}  // namespace
}  // namespace kbench
