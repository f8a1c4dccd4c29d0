#include "core/decision.hpp"

#include "core/verdict.hpp"

#include <gtest/gtest.h>

namespace kbench {

TEST(Decision, EachKindOfOutcomeHasItsStatusAndBlame) {
    EXPECT_EQ(Decision::correct().status, Status::correct);
    EXPECT_FALSE(Decision::correct().masked());
    Decision r = Decision::rejected("decoy_kernel", "runtime rule decoy_kernel: ...");
    EXPECT_EQ(r.status, Status::rejected);
    EXPECT_EQ(r.rule, "decoy_kernel");
    EXPECT_FALSE(r.masked());
    EXPECT_EQ(Decision::incorrect("trial 2").blame, Blame::candidate);
    EXPECT_EQ(Decision::failed(Status::crash, "SIGSEGV").status, Status::crash);
    // A failure of the candidate's is never a status that says otherwise.
    for (Status s : {Status::correct, Status::incorrect, Status::rejected, Status::infra_error})
        EXPECT_THROW(Decision::failed(s, "x"), std::logic_error) << to_string(s);
    Decision ref = Decision::of_reference("the reference could not be loaded: ...");
    EXPECT_EQ(ref.status, Status::load_error);
    EXPECT_EQ(ref.blame, Blame::reference);
    EXPECT_TRUE(ref.masked());
    EXPECT_EQ(Decision::of_problem("does not fit").blame, Blame::problem);
    EXPECT_TRUE(Decision::of_problem("does not fit").masked());
    Decision k = Decision::of_kbench("the judge failed");
    EXPECT_EQ(k.status, Status::infra_error);
    EXPECT_TRUE(k.masked());
}

TEST(Decision, TravelsWithTheVerdictAndOlderVerdictsGetTheirBlame) {
    Verdict v;
    v.problem = {1, 19, "19_ReLU", "abc"};
    v.candidate = {"relu.py", "def", "cuda", 0};
    decide(v, Decision::of_problem("the problem does not fit on cuda:0: it needs 90 GiB"));
    json j = v.to_json();
    EXPECT_EQ(j["status"], "load_error");
    EXPECT_EQ(j["blame"], "problem");
    EXPECT_EQ(j["masked"], true);
    Verdict back = Verdict::from_json(j);
    EXPECT_EQ(back.blame, Blame::problem);
    EXPECT_EQ(back.reason, v.reason);

    decide(v, Decision::rejected("no_kernel_call", "static rule no_kernel_call: ..."));
    j = v.to_json();
    EXPECT_EQ(j["rule"], "no_kernel_call");
    EXPECT_EQ(j["masked"], false);
    EXPECT_EQ(Verdict::from_json(j).rule, "no_kernel_call");

    // Stored before verdicts named their blame: inferred from status and reason.
    j.erase("blame");
    j.erase("rule");
    j["status"] = "load_error";
    j["reason"] = "the reference could not be loaded: NameError";
    EXPECT_EQ(Verdict::from_json(j).blame, Blame::reference);
    j["reason"] = "the problem does not fit on cuda:0: it needs 90 GiB";
    EXPECT_EQ(Verdict::from_json(j).blame, Blame::problem);
    j["reason"] = "ModelNew is not defined";
    EXPECT_EQ(Verdict::from_json(j).blame, Blame::candidate);
    j["status"] = "infra_error";
    EXPECT_EQ(Verdict::from_json(j).blame, Blame::kbench);
    EXPECT_FALSE(parse_blame("judge"));
    for (Blame b : {Blame::candidate, Blame::reference, Blame::problem, Blame::kbench})
        EXPECT_EQ(parse_blame(to_string(b)), b);
}

}  // namespace kbench
