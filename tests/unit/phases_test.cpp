// The evaluation pipeline against fake workers: every fault becomes the verdict its kind maps
// to, the candidate's claims never decide more than the judge allows, and a reply that lacks a
// field can never end as `correct`.
#include "schedule/phases.hpp"

#include <gtest/gtest.h>

#include "core/error.hpp"
#include "schedule/evaluator.hpp"

namespace kbench::schedule {
namespace {

using protocol::Fault;
using protocol::FaultKind;

// A judge whose replies are JSON, decoded as a judge process's are: a malformed one is kbench's
// own failure, never a verdict.
class FakeJudge : public JudgeClient {
  public:
    json attach_reply = protocol::reply_json(protocol::SandboxAttached{{50, 10, 5}});
    json load_reply = protocol::reply_json(protocol::Empty{});
    json correctness_reply = protocol::reply_json(protocol::CorrectnessChecked{5, 5, 0, 0, ""});
    json timing_reply = protocol::reply_json(
        protocol::CandidateTimed{{{100, 101, 99, 100}, true, 3, 7, 0, "median"}, {}, 2, ""});
    json baseline_reply = protocol::reply_json(
        protocol::BaselineTimed{{{200, 201, 199, 200}, true, 3, 7, 0, "median"},
                                {{"tf32_matmul", false}}});
    int detached = 0;

    protocol::Reply<protocol::SandboxAttached> attach(const protocol::AttachRequest&,
                                                      int) override {
        return decode<protocol::SandboxAttached>(attach_reply);
    }
    protocol::Reply<protocol::Empty> load(const protocol::LoadRequest&) override {
        return decode<protocol::Empty>(load_reply);
    }
    protocol::Reply<protocol::CorrectnessChecked> correctness(
        const protocol::CorrectnessRequest&) override {
        return decode<protocol::CorrectnessChecked>(correctness_reply);
    }
    protocol::Reply<protocol::CandidateTimed> timing(const protocol::TimingRequest&) override {
        return decode<protocol::CandidateTimed>(timing_reply);
    }
    protocol::Reply<protocol::Empty> detach() override {
        ++detached;
        return decode<protocol::Empty>(protocol::reply_json(protocol::Empty{}));
    }
    protocol::Reply<protocol::BaselineTimed> baseline(const protocol::BaselineRequest&,
                                                      double) override {
        return decode<protocol::BaselineTimed>(baseline_reply);
    }

  private:
    template <typename T>
    protocol::Reply<T> decode(const json& j) {
        try {
            return protocol::read_reply<T>(j, "judge reply");
        } catch (const ProtocolError& e) {
            throw InfraError(std::string("the judge broke kbench's protocol: ") + e.what());
        }
    }
};

class FakeSandbox : public SandboxHandle {
  public:
    ConfinedExit end;
    bool killed = false, finished = false;
    std::vector<std::string> thread_names = {"python3 (1)"};
    std::vector<std::string> thread_names_later = {"python3 (1)"};
    std::vector<std::string> process_names;
    mutable int thread_calls = 0;

    ConfinedExit finish() override {
        finished = true;
        return end;
    }
    ConfinedExit kill() override {
        killed = true;
        return end;
    }
    std::string output() const override { return "candidate output"; }
    std::vector<std::string> threads() const override {
        return thread_calls++ == 0 ? thread_names : thread_names_later;
    }
    std::vector<std::string> processes() const override { return process_names; }
};

class Pipeline : public ::testing::Test {
  protected:
    Verdict run() {
        Verdict v;
        PhaseContext c{config, judge, sandbox, v, {}};
        run_pipeline(c, -1, 1234, "/tmp/candidate.py");
        return v;
    }

    CheckConfig config;
    FakeJudge judge;
    FakeSandbox sandbox;
};

json fault(FaultKind kind, const std::string& message, const std::string& rule = "") {
    return protocol::fault_json({kind, message, rule});
}

TEST_F(Pipeline, AllGoodIsCorrectWithASpeedupFromBothSamples) {
    Verdict v = run();
    EXPECT_EQ(v.status, Status::correct);
    ASSERT_TRUE(v.speedup);
    EXPECT_NEAR(*v.speedup, 2.0, 0.05);
    EXPECT_EQ(v.timing->n, 4);
    EXPECT_TRUE(sandbox.finished) << "the sandbox ends before the baseline is timed";
    EXPECT_EQ(v.correctness.trials_passed, 5);
}

TEST_F(Pipeline, EachCandidateFaultBecomesItsStatus) {
    struct Case {
        FaultKind kind;
        Status status;
    };
    for (Case k : {Case{FaultKind::candidate_load, Status::load_error},
                   Case{FaultKind::candidate_build, Status::compile_error},
                   Case{FaultKind::candidate_raised, Status::runtime_error},
                   Case{FaultKind::candidate_overran, Status::timeout},
                   Case{FaultKind::sandbox_ended, Status::crash},
                   Case{FaultKind::protocol_violation, Status::rejected},
                   Case{FaultKind::integrity, Status::rejected}}) {
        FakeJudge j;
        FakeSandbox s;
        s.end.known = true;
        s.end.status.signal = 11;
        j.load_reply = fault(k.kind, "Traceback...\nValueError: nope", "some_rule");
        Verdict v;
        PhaseContext c{config, j, s, v, {}};
        run_pipeline(c, -1, 1, "c.py");
        EXPECT_EQ(v.status, k.status) << to_string(k.kind);
        EXPECT_FALSE(v.reason.empty());
        EXPECT_EQ(j.detached, 1) << "the judge lets go of the sandbox";
        EXPECT_FALSE(v.timing.has_value());
    }
}

TEST_F(Pipeline, ASandboxThatDiedSaysHow) {
    judge.correctness_reply = fault(FaultKind::sandbox_ended, "ended");
    sandbox.end.known = true;
    sandbox.end.status.signal = 11;
    Verdict v = run();
    EXPECT_EQ(v.status, Status::crash);
    EXPECT_NE(v.reason.find("SIGSEGV"), std::string::npos) << v.reason;
    EXPECT_NE(v.reason.find("correctness"), std::string::npos) << v.reason;
    EXPECT_TRUE(sandbox.finished) << "its end is collected, not cut short";
}

TEST_F(Pipeline, AnIntegrityFaultRejectsWithItsRule) {
    judge.timing_reply = fault(FaultKind::integrity, "claimed 5 us, the clock saw 500 us",
                               "claimed_time_below_clock");
    Verdict v = run();
    EXPECT_EQ(v.status, Status::rejected);
    ASSERT_EQ(v.integrity.size(), 1u);
    EXPECT_EQ(v.integrity[0].rule, "claimed_time_below_clock");
    EXPECT_EQ(v.integrity[0].severity, "reject");
    EXPECT_NE(v.reason.find("500 us"), std::string::npos);
}

TEST_F(Pipeline, ReferenceAndHarnessFaultsAreNotTheCandidates) {
    judge.correctness_reply = fault(FaultKind::reference, "the reference raised");
    EXPECT_THROW(run(), ReferenceError);
    FakeJudge other;
    other.correctness_reply = fault(FaultKind::harness, "judge bug");
    Verdict v;
    PhaseContext c{config, other, sandbox, v, {}};
    EXPECT_THROW(run_pipeline(c, -1, 1, "c.py"), InfraError);
}

TEST_F(Pipeline, FailedTrialsAreIncorrectWithTheFirstReason) {
    judge.correctness_reply =
        protocol::reply_json(protocol::CorrectnessChecked{5, 3, 2.0, 1.0, "trial 1 output 0: off"});
    Verdict v = run();
    EXPECT_EQ(v.status, Status::incorrect);
    EXPECT_EQ(v.reason, "trial 1 output 0: off");
    EXPECT_EQ(v.correctness.trials_passed, 3);
}

TEST_F(Pipeline, AWrongTimedCallIsIncorrect) {
    protocol::CandidateTimed t;
    t.failure = "timed call 17 output 0: 5 of 10 values differ";
    t.checked_calls = 4;
    judge.timing_reply = protocol::reply_json(t);
    Verdict v = run();
    EXPECT_EQ(v.status, Status::incorrect);
    EXPECT_NE(v.reason.find("timed call 17"), std::string::npos);
}

TEST_F(Pipeline, ThreadsAndProcessesTheCandidateStartedAreNamed) {
    sandbox.thread_names_later = {"python3 (1)", "sneaky (77)"};
    sandbox.process_names = {"sleep (78)"};
    sandbox.end.leftovers = {"sleep"};
    Verdict v = run();
    EXPECT_EQ(v.status, Status::correct);
    std::string all;
    for (const auto& f : v.integrity) all += f.rule + ": " + f.detail + "\n";
    EXPECT_NE(
        all.find("threads_started: threads the candidate started while it was timed: sneaky (77)"),
        std::string::npos)
        << all;
    EXPECT_NE(all.find("processes_started"), std::string::npos) << all;
    EXPECT_NE(all.find("processes_left_behind"), std::string::npos) << all;
}

// Whatever field a reply lacks, the evaluation cannot end as correct.
TEST_F(Pipeline, AReplyMissingAnyFieldNeverEndsCorrect) {
    FakeJudge good;
    std::vector<std::pair<std::string, json FakeJudge::*>> replies = {
        {"attach", &FakeJudge::attach_reply},
        {"correctness", &FakeJudge::correctness_reply},
        {"timing", &FakeJudge::timing_reply},
        {"baseline", &FakeJudge::baseline_reply}};
    for (const auto& [name, member] : replies) {
        std::vector<std::string> paths;
        std::function<void(const json&, const std::string&)> walk = [&](const json& j,
                                                                        const std::string& at) {
            if (!j.is_object()) return;
            for (const auto& [key, value] : j.items()) {
                paths.push_back(at + "/" + key);
                // The precision flags are a record of the judge's state, not a schema.
                if (key != "precision") walk(value, at + "/" + key);
            }
        };
        walk(good.*member, "");
        for (const std::string& path : paths) {
            FakeJudge j;
            FakeSandbox s;
            json broken = good.*member;
            json::json_pointer pointer(path);
            broken[pointer.parent_pointer()].erase(pointer.back());
            j.*member = broken;
            Verdict v;
            PhaseContext c{config, j, s, v, {}};
            try {
                run_pipeline(c, -1, 1, "c.py");
            } catch (const InfraError&) {
                continue;  // kbench's own failure: retried, never scored
            }
            EXPECT_NE(v.status, Status::correct) << name << " reply without " << path;
        }
    }
}

}  // namespace
}  // namespace kbench::schedule
