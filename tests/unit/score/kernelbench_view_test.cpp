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

}  // namespace
}  // namespace kbench
