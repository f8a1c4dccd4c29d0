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

}  // namespace
}  // namespace kbench
