#include "score/run_score.hpp"

#include <gtest/gtest.h>

#include <cmath>

namespace kbench::score {
namespace {

ProblemOutcome problem(int id, std::size_t candidates, std::size_t correct,
                       std::optional<double> speedup) {
    ProblemOutcome p;
    p.level = 1;
    p.id = id;
    p.name = std::to_string(id) + "_P";
    p.candidates = candidates;
    p.correct_candidates = correct;
    p.correct = correct > 0;
    p.best_speedup = speedup;
    return p;
}

// Four problems, worked out by hand: A correct at 2x (one of two candidates), B correct at 0.5x,
// C incorrect, D without a usable candidate.
std::vector<ProblemOutcome> four() {
    return {problem(1, 2, 1, 2.0), problem(2, 1, 1, 0.5), problem(3, 1, 0, std::nullopt),
            problem(4, 0, 0, std::nullopt)};
}

TEST(RunScore, PointNumbersAreWorkedOutByHand) {
    auto levels = score_levels(four(), {0, 1, 1.5, 2}, {}, false);
    ASSERT_EQ(levels.size(), 1u);  // one level: no "all" row
    const LevelScore& l = levels[0];
    EXPECT_EQ(l.level, "1");
    EXPECT_EQ(l.problems, 4u);
    EXPECT_EQ(l.candidates, 4u);
    EXPECT_DOUBLE_EQ(l.correct_rate.value, 2.0 / 4.0);  // correct candidates of all candidates
    EXPECT_DOUBLE_EQ(l.fast_p.at(0).value, 2.0 / 4.0);  // A and B are correct
    EXPECT_DOUBLE_EQ(l.fast_p.at(1).value, 1.0 / 4.0);  // A alone is at least 1x
    EXPECT_DOUBLE_EQ(l.fast_p.at(2).value, 1.0 / 4.0);  // at least: 2x counts at p = 2
    EXPECT_DOUBLE_EQ(l.geomean.value, 1.0);             // sqrt(2 x 0.5)
    EXPECT_EQ(l.geomean_problems, 2u);
}

TEST(RunScore, IntervalsHoldThePointAndComeBackWithTheSeed) {
    auto a = score_levels(four(), {0, 1}, {2000, 7}, false);
    auto b = score_levels(four(), {0, 1}, {2000, 7}, false);
    auto c = score_levels(four(), {0, 1}, {2000, 8}, false);
    const Interval& f = a[0].fast_p.at(0);
    EXPECT_LE(f.lo, f.value);
    EXPECT_GE(f.hi, f.value);
    EXPECT_LT(f.lo, f.hi);  // four problems: far from certain
    EXPECT_EQ(f.lo, b[0].fast_p.at(0).lo);
    EXPECT_EQ(f.hi, b[0].fast_p.at(0).hi);
    EXPECT_EQ(a[0].geomean.lo, b[0].geomean.lo);
    // Another seed draws other resamples (the bounds of a geometric mean of many move).
    std::vector<ProblemOutcome> many;
    for (int i = 0; i < 40; ++i) many.push_back(problem(i, 1, 1, 0.5 + 0.1 * i));
    auto m7 = score_levels(many, {0}, {2000, 7}, false);
    auto m8 = score_levels(many, {0}, {2000, 8}, false);
    EXPECT_TRUE(m7[0].geomean.lo != m8[0].geomean.lo || m7[0].geomean.hi != m8[0].geomean.hi);
    EXPECT_LT(m7[0].geomean.lo, m7[0].geomean.value);
    EXPECT_GT(m7[0].geomean.hi, m7[0].geomean.value);
    (void)c;
    // Resampling problems of which every one is correct cannot move the rate.
    std::vector<ProblemOutcome> sure = {problem(1, 1, 1, 1.0), problem(2, 1, 1, 3.0)};
    auto s = score_levels(sure, {0}, {}, false);
    EXPECT_EQ(s[0].fast_p.at(0).lo, 1.0);
    EXPECT_EQ(s[0].fast_p.at(0).hi, 1.0);
}

TEST(RunScore, LevelsAndAllAndFlaggedProblems) {
    auto problems = four();
    ProblemOutcome two = problem(1, 1, 1, 4.0);
    two.level = 2;
    problems.push_back(two);
    problems[0].flagged = true;
    auto levels = score_levels(problems, {0, 1}, {}, true);
    ASSERT_EQ(levels.size(), 3u);
    EXPECT_EQ(levels[0].level, "1");
    EXPECT_EQ(levels[0].problems, 3u);  // A left out
    EXPECT_EQ(levels[0].flagged_left_out, 1u);
    EXPECT_DOUBLE_EQ(levels[0].fast_p.at(1).value, 0.0);
    EXPECT_EQ(levels[1].level, "2");
    EXPECT_DOUBLE_EQ(levels[1].fast_p.at(1).value, 1.0);
    EXPECT_EQ(levels[2].level, "all");
    EXPECT_EQ(levels[2].problems, 4u);
    EXPECT_DOUBLE_EQ(levels[2].fast_p.at(0).value, 2.0 / 4.0);
    EXPECT_DOUBLE_EQ(levels[2].geomean.value, std::sqrt(0.5 * 4.0));
}

TEST(RunScore, ABaselineFileSpeedsUpByItsMeanAndListsWhatItLacks) {
    auto verdict = [](int id, const std::string& name, double candidate_us) {
        Verdict v;
        v.problem.level = 1;
        v.problem.id = id;
        v.problem.name = name;
        v.status = Status::correct;
        v.speedup = 9.0;  // the verdict's own: not used against a file
        TimingResult t;
        t.median_us = candidate_us;
        t.mean_us = candidate_us;
        v.timing = t;
        return v;
    };
    std::vector<Verdict> verdicts = {verdict(1, "1_A", 500), verdict(2, "2_B", 100)};
    nlohmann::json file = {{"level1", {{"1_A.py", {{"mean", 1.0}}}}}};  // ms; 2_B absent
    auto outcomes = problem_outcomes(verdicts, {{1, 1, "1_A"}, {1, 2, "2_B"}, {1, 3, "3_C"}}, file);
    ASSERT_EQ(outcomes.size(), 3u);
    ASSERT_TRUE(outcomes[0].best_speedup);
    EXPECT_DOUBLE_EQ(*outcomes[0].best_speedup, 2.0);  // 1 ms over 500 us
    EXPECT_FALSE(outcomes[1].has_baseline);
    EXPECT_FALSE(outcomes[1].best_speedup);
    EXPECT_EQ(outcomes[2].candidates, 0u);  // selected, no verdict: a failure
    auto levels = score_levels(outcomes, {0, 1}, {}, false);
    EXPECT_DOUBLE_EQ(levels[0].fast_p.at(0).value, 2.0 / 3.0);
    EXPECT_DOUBLE_EQ(levels[0].fast_p.at(1).value, 1.0 / 3.0);
    EXPECT_EQ(levels[0].without_baseline, (std::vector<std::string>{"2_B", "3_C"}));
    // Each verdict's own speedup without a file.
    auto own = problem_outcomes(verdicts, {}, nullptr);
    EXPECT_DOUBLE_EQ(*own[0].best_speedup, 9.0);
}

}  // namespace
}  // namespace kbench::score
