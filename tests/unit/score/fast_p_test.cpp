#include "score/fast_p.hpp"

#include <gtest/gtest.h>

namespace kbench::score {
namespace {

Verdict verdict(const std::string& problem, Status status, std::optional<double> speedup) {
    Verdict v;
    v.problem.name = problem;
    v.problem.sha256 = problem;
    v.status = status;
    v.speedup = speedup;
    return v;
}

}  // namespace

TEST(FastP, BestCandidateOfEachProblemCounts) {
    std::vector<Verdict> verdicts = {verdict("a", Status::correct, 0.5),
                                     verdict("a", Status::correct, 2.5),  // best 2.5
                                     verdict("b", Status::incorrect, std::nullopt),
                                     verdict("c", Status::correct, 1.2),
                                     verdict("c", Status::crash, std::nullopt),
                                     verdict("d", Status::compile_error, std::nullopt)};
    Score s = score_verdicts(verdicts, {0.0, 1.0, 2.0});
    EXPECT_EQ(s.problems, 4u);
    EXPECT_EQ(s.candidates, 6u);
    EXPECT_DOUBLE_EQ(s.fast_p[0.0], 0.5);   // a and c correct
    EXPECT_DOUBLE_EQ(s.fast_p[1.0], 0.5);   // 2.5 and 1.2
    EXPECT_DOUBLE_EQ(s.fast_p[2.0], 0.25);  // only a
    EXPECT_NEAR(s.geomean_speedup, std::sqrt(2.5 * 1.2), 1e-12);
    EXPECT_EQ(s.by_status["correct"], 3u);
    EXPECT_NE(format_score(s).find("fast_2"), std::string::npos);
}

TEST(FastP, NothingCorrectScoresZero) {
    Score s = score_verdicts({verdict("a", Status::timeout, std::nullopt)});
    EXPECT_DOUBLE_EQ(s.fast_p[0.0], 0.0);
    EXPECT_EQ(s.geomean_speedup, 0.0);
}

}  // namespace kbench::score
