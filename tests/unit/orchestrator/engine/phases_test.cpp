// The evaluation pipeline against fake workers: every fault becomes the verdict its kind maps
// to, the candidate's claims never decide more than the judge allows, and a reply that lacks a
// field can never end as `correct`.
#include "orchestrator/engine/phases.hpp"

#include <atomic>
#include <functional>
#include <tuple>

#include "core/files.hpp"
#include "integrity/floor.hpp"

#include <gtest/gtest.h>

#include "core/error.hpp"
#include "orchestrator/engine/evaluator.hpp"
#include "orchestrator/engine/text.hpp"

namespace kbench::orchestrator {
namespace {

using protocol::Fault;
using protocol::FaultKind;

// A baseline reply: 200 us, TF32 off, the given work.
protocol::BaselineTimed timed_baseline(const json& work) {
    protocol::BaselineTimed t;
    t.measured = protocol::Measured{{200, 201, 199, 200}, true, 3, 7, 0, "median"};
    t.precision = json::object({{"tf32_matmul", false}});
    t.work = work;
    return t;
}

// A judge whose replies are JSON, decoded as a judge process's are: a malformed one is kbench's
// own failure, never a verdict.
class FakeJudge : public JudgeClient {
  public:
    json attach_reply = protocol::reply_json(protocol::SandboxAttached{{50, 10, 5}});
    json load_reply = protocol::reply_json(protocol::Empty{});
    json correctness_reply = protocol::reply_json(protocol::CorrectnessChecked{5, 5, 0, 0, ""});
    json timing_reply = protocol::reply_json(
        protocol::CandidateTimed{{{100, 101, 99, 100}, true, 3, 7, 0, "median"}, {}, 2, ""});
    json baseline_reply = protocol::reply_json(timed_baseline(json{{"flops", 1000000},
                                                                   {"bytes", 4096},
                                                                   {"input_bytes", 2048},
                                                                   {"parameter_bytes", 0},
                                                                   {"output_bytes", 2048}}));
    json knockout_reply = protocol::reply_json(protocol::KnockoutChecked{});
    std::vector<std::vector<std::string>> knocked_out;  // each knockout request's names
    int detached = 0;
    std::vector<bool> baseline_timed;   // each baseline request's `time`
    std::function<void()> on_baseline;  // runs as a baseline request arrives

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
    protocol::Reply<protocol::KnockoutChecked> knockout(
        const protocol::KnockoutRequest& request) override {
        knocked_out.push_back(request.names);
        return decode<protocol::KnockoutChecked>(knockout_reply);
    }
    protocol::Reply<protocol::Empty> detach() override {
        ++detached;
        return decode<protocol::Empty>(protocol::reply_json(protocol::Empty{}));
    }
    protocol::Reply<protocol::BaselineTimed> baseline(const protocol::BaselineRequest& request,
                                                      double) override {
        baseline_timed.push_back(request.time);
        if (on_baseline) on_baseline();
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

    const int* judge_detached = nullptr;  // the judge's count of detach requests
    int detached_at_finish = -1;          // that count when finish was called

    ConfinedExit finish() override {
        finished = true;
        if (judge_detached) detached_at_finish = *judge_detached;
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
        c.origins = origins;
        c.gpu_entry = gpu_entry;
        c.rules = integrity::RulePolicy::of(config);
        c.end_reference = end_reference;
        c.candidate_ended = [this] { ++candidate_ended; };
        sandbox.judge_detached = &judge.detached;
        run_pipeline(c, -1, 1234, "/tmp/candidate.py");
        return v;
    }

    // Kernel records as a sandbox reports them: {name, window, total_ns} rows.
    static json kernels(const std::vector<std::tuple<std::string, std::string, int>>& rows,
                        int calls = 5) {
        protocol::KernelsReported r{true, "", {}, std::uint64_t(calls), 1000000, 0};
        for (const auto& [name, window, ns] : rows)
            r.rows.push_back({name, 7, window, 1, std::uint64_t(ns)});
        return r.to_json();
    }
    void correctness_kernels(const json& k) {
        protocol::CorrectnessChecked c{5, 5, 0, 0, ""};
        c.kernels = k;
        judge.correctness_reply = protocol::reply_json(c);
    }

    CheckConfig config;
    FakeJudge judge;
    FakeSandbox sandbox;
    integrity::KernelOrigins origins{{}, {"relu_kernel"}, {"add_kernel"}};
    json gpu_entry = nullptr;
    std::function<void()> end_reference;
    int candidate_ended = 0;
};

json fault(FaultKind kind, const std::string& message, const std::string& rule = "") {
    return protocol::fault_json({kind, message, rule});
}

TEST_F(Pipeline, RoundsGiveTheSpeedupAndTheBaselineIsNotTimedAgain) {
    protocol::CandidateTimed t{{{100, 101, 99, 100}, true, 3, 7, 0, "median"}, {}, 2, ""};
    t.baseline = protocol::Measured{{150, 151, 149, 150}, true, 0, 8, 0, "median"};
    t.round_ratios = {1.5, 1.5, 1.5, 1.5, 1.5};
    judge.timing_reply = protocol::reply_json(t);
    Verdict v = run();
    EXPECT_EQ(v.status, Status::correct);
    ASSERT_TRUE(v.speedup);
    EXPECT_NEAR(*v.speedup, 1.5, 1e-9) << "from the rounds, not the baseline timed apart (2x)";
    EXPECT_EQ(v.speedup_rounds, 5);
    EXPECT_NEAR(v.baseline->median_us, 150, 1e-9);
    EXPECT_EQ(judge.baseline_timed, std::vector<bool>{false});
    // A single round is no interval: the baseline is timed apart.
    t.round_ratios = {1.5};
    judge.timing_reply = protocol::reply_json(t);
    Verdict one = run();
    EXPECT_NEAR(*one.speedup, 2.0, 0.05);
    EXPECT_EQ(judge.baseline_timed, (std::vector<bool>{false, true}));
}

TEST_F(Pipeline, WithRoundsBothSandboxesEndBesideTheLastRequestAndTheirEndStillDecides) {
    protocol::CandidateTimed t{{{100, 101, 99, 100}, true, 3, 7, 0, "median"}, {}, 2, ""};
    t.baseline = protocol::Measured{{150, 151, 149, 150}, true, 0, 8, 0, "median"};
    t.round_ratios = {1.5, 1.5, 1.5, 1.5, 1.5};
    judge.timing_reply = protocol::reply_json(t);
    std::atomic<bool> reference_ended{false};
    end_reference = [&] { reference_ended = true; };
    sandbox.end.leftovers = {"sleep (7)"};
    Verdict v = run();
    EXPECT_EQ(v.status, Status::correct);
    EXPECT_EQ(judge.detached, 1) << "the judge lets go of both sandboxes first";
    EXPECT_TRUE(sandbox.finished);
    EXPECT_TRUE(reference_ended) << "the reference's own sandbox ends too";
    EXPECT_EQ(judge.baseline_timed, std::vector<bool>{false});
    EXPECT_TRUE(v.phases_s.count("baseline"));
    bool left = false;
    for (const auto& f : v.integrity) left = left || f.rule == "processes_left_behind";
    EXPECT_TRUE(left) << "what the candidate's process left behind is named";
    // A signal its processes sent to kbench, seen only once it is reaped: rejected, whatever
    // the judge's last request said.
    sandbox.end.signals = {"SIGTERM"};
    Verdict signalled = run();
    EXPECT_EQ(signalled.status, Status::rejected);
    ASSERT_FALSE(signalled.integrity.empty());
    bool rule = false;
    for (const auto& f : signalled.integrity) rule = rule || f.rule == "signalled_kbench";
    EXPECT_TRUE(rule);
}

TEST_F(Pipeline, ABaselineTimedInTheJudgeWaitsForTheCandidatesProcessToEnd) {
    std::vector<bool> finished_before;
    judge.on_baseline = [&] { finished_before.push_back(sandbox.finished); };
    Verdict v = run();
    EXPECT_EQ(v.status, Status::correct);
    EXPECT_EQ(judge.baseline_timed, std::vector<bool>{true});
    EXPECT_EQ(finished_before, std::vector<bool>{true});
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
        EXPECT_GE(j.detached, 1) << "the judge lets go of the sandbox";
        EXPECT_FALSE(v.timing.has_value());
    }
}

// A failed candidate's process holds its socket on the judge's side: unless the judge lets go
// of it (which tells it to exit) before kbench waits for its end, that wait runs out its grace
// (2 s an incorrect candidate on the H200). Once it has ended, the next candidate may start.
TEST_F(Pipeline, AFailedCandidateIsLetGoByTheJudgeBeforeItsEndIsAwaited) {
    struct Case {
        std::string what;
        std::function<void(FakeJudge&)> set;
        Status status;
    };
    protocol::CandidateTimed wrong;
    wrong.failure = "timed call 3 output 0: off";
    std::vector<Case> cases = {
        {"failed trials",
         [](FakeJudge& j) {
             j.correctness_reply =
                 protocol::reply_json(protocol::CorrectnessChecked{5, 0, 2.0, 1.0, "off"});
         },
         Status::incorrect},
        {"a raise in correctness",
         [](FakeJudge& j) {
             j.correctness_reply = fault(FaultKind::candidate_raised, "RuntimeError: launch");
         },
         Status::runtime_error},
        {"a raise at load",
         [](FakeJudge& j) { j.load_reply = fault(FaultKind::candidate_load, "ImportError"); },
         Status::load_error},
        {"a wrong timed call", [&](FakeJudge& j) { j.timing_reply = protocol::reply_json(wrong); },
         Status::incorrect},
        {"a runtime rule",
         [](FakeJudge& j) {
             protocol::CorrectnessChecked c{5, 5, 0, 0, ""};
             c.kernels =
                 kernels({{"_ZN2at6native29vectorized_elementwise_kernelILi4EEEvi", "call", 9000}});
             j.correctness_reply = protocol::reply_json(c);
         },
         Status::rejected},
    };
    for (const Case& k : cases) {
        judge = FakeJudge{};
        sandbox = FakeSandbox{};
        candidate_ended = 0;
        k.set(judge);
        Verdict v = run();
        EXPECT_EQ(v.status, k.status) << k.what << ": " << v.reason;
        EXPECT_TRUE(sandbox.finished) << k.what;
        EXPECT_GE(sandbox.detached_at_finish, 1)
            << k.what << ": the judge let go of the sandbox before its end was awaited";
        EXPECT_EQ(candidate_ended, 1) << k.what << ": the next candidate may start";
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
    EXPECT_EQ(v.integrity[0].severity, Severity::reject);
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
                // The precision flags and the reference's work are records, not a schema (work
                // without its counts gives no floor, never a pass).
                if (key != "precision" && key != "work") walk(value, at + "/" + key);
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

TEST_F(Pipeline, NoKernelOfTheCandidatesOwnIsRejectedUnderStrict) {
    correctness_kernels(
        kernels({{"_ZN2at6native29vectorized_elementwise_kernelILi4EEEvi", "call", 90000},
                 {"_ZN2at6native18elementwise_kernelEv", "kbench", 5000}}));
    Verdict v = run();
    EXPECT_EQ(v.status, Status::rejected);
    EXPECT_NE(v.reason.find("no_candidate_kernel"), std::string::npos) << v.reason;
    EXPECT_NE(v.reason.find("at::native::vectorized_elementwise_kernel"), std::string::npos)
        << v.reason;
    ASSERT_FALSE(v.kernels.empty());
    EXPECT_EQ(v.kernels[0].origin, "library");
    EXPECT_FALSE(v.timing.has_value()) << "rejected before it is timed";

    config.policy = "permissive";
    Verdict p = run();
    EXPECT_EQ(p.status, Status::correct) << "permissive: the finding is a warning";
    bool warned = false;
    for (const auto& f : p.integrity)
        warned = warned || (f.rule == "no_candidate_kernel" && f.severity == Severity::warn);
    EXPECT_TRUE(warned);
}

TEST_F(Pipeline, ADecoyKernelIsRejectedAndHonestSharesPass) {
    // The candidate's kernel (mangled, in no namespace) does 0.1% of the work.
    correctness_kernels(kernels({{"_Z11relu_kernelPKfPfi", "call", 100},
                                 {"sm90_xmma_gemm_f32f32_tf32f32_f32_nn_n", "call", 99900}}));
    Verdict v = run();
    EXPECT_EQ(v.status, Status::rejected);
    EXPECT_NE(v.reason.find("decoy_kernel"), std::string::npos) << v.reason;

    // A fused epilogue beside cuDNN's convolution: 5% of the time is the candidate's.
    correctness_kernels(kernels(
        {{"_Z11relu_kernelPKfPfi", "call", 5000}, {"cudnn_infer_conv2d_fprop", "call", 95000}}));
    Verdict honest = run();
    EXPECT_EQ(honest.status, Status::correct) << honest.reason;
    ASSERT_TRUE(honest.kernel_activity.is_object());
    EXPECT_NEAR(honest.kernel_activity.value("candidate_share", 0.0), 0.05, 1e-9);
}

TEST_F(Pipeline, ASmallShareIsADecoyOnlyWhereTheOutputsDoNotDependOnIt) {
    correctness_kernels(kernels({{"_Z11relu_kernelPKfPfi", "call", 100},
                                 {"sm90_xmma_gemm_f32f32_tf32f32_f32_nn_n", "call", 99900}}));
    // Its kernels knocked out, the outputs are NaN where only they wrote: an epilogue.
    protocol::KnockoutChecked changed{
        true,
        "",
        5,
        true,
        "trial 0: NaN where the reference has none",
        kernels({{"kbench_knocked_out", "call", 10},
                 {"sm90_xmma_gemm_f32f32_tf32f32_f32_nn_n", "call", 99900}},
                1)};
    judge.knockout_reply = protocol::reply_json(changed);
    Verdict epilogue = run();
    EXPECT_EQ(epilogue.status, Status::correct) << epilogue.reason;
    ASSERT_EQ(judge.knocked_out.size(), 1u);
    EXPECT_EQ(judge.knocked_out[0], std::vector<std::string>{"_Z11relu_kernelPKfPfi"});
    const Finding* small = nullptr;
    for (const auto& f : epilogue.integrity)
        if (f.rule == "small_kernel_share") small = &f;
    ASSERT_NE(small, nullptr);
    EXPECT_EQ(small->severity, Severity::warn);
    EXPECT_NE(small->detail.find("the outputs change"), std::string::npos) << small->detail;
    EXPECT_TRUE(epilogue.kernel_activity["knockout"].value("changed", false));

    // The outputs are the reference's without them: a decoy.
    protocol::KnockoutChecked same = changed;
    same.changed = false;
    same.how = "the outputs still match the reference's (max abs diff 0)";
    judge.knockout_reply = protocol::reply_json(same);
    Verdict decoy = run();
    EXPECT_EQ(decoy.status, Status::rejected);
    EXPECT_NE(decoy.reason.find("contribute nothing"), std::string::npos) << decoy.reason;

    // A knockout whose records show the candidate's kernel running anyway decides nothing.
    protocol::KnockoutChecked leaked = changed;
    leaked.kernels = kernels({{"_Z11relu_kernelPKfPfi", "call", 100}}, 1);
    judge.knockout_reply = protocol::reply_json(leaked);
    Verdict undecided = run();
    EXPECT_EQ(undecided.status, Status::rejected);
    EXPECT_NE(undecided.reason.find("still ran"), std::string::npos) << undecided.reason;

    // Nor does one that could not replace anything, or whose call failed.
    judge.knockout_reply = protocol::reply_json(
        protocol::KnockoutChecked{false, "CUPTI's callbacks are taken", 0, false, "", nullptr});
    Verdict taken = run();
    EXPECT_EQ(taken.status, Status::rejected);
    EXPECT_NE(taken.reason.find("could not be checked: CUPTI"), std::string::npos) << taken.reason;
    judge.knockout_reply =
        protocol::fault_json({protocol::FaultKind::candidate_raised, "IndexError: out", ""});
    EXPECT_EQ(run().status, Status::rejected);
    // kbench's own failure there is never the candidate's verdict.
    judge.knockout_reply =
        protocol::fault_json({protocol::FaultKind::harness, "the judge lost its device", ""});
    bool infra = false;
    try {
        Verdict v = run();
        infra = v.status == Status::infra_error;
    } catch (const InfraError&) {
        infra = true;
    }
    EXPECT_TRUE(infra);

    // Where the decoy rule only warns, nothing is knocked out.
    judge.knocked_out.clear();
    config.policy = "permissive";
    EXPECT_EQ(run().status, Status::correct);
    EXPECT_TRUE(judge.knocked_out.empty());
}

TEST_F(Pipeline, CpuSamplesTellWhetherTheCandidatesCompiledCodeDidTheWork) {
    config.device = "cpu";
    auto samples = [](const std::vector<std::pair<std::string, int>>& rows, int calls = 5) {
        protocol::KernelsReported r{true, "", {}, std::uint64_t(calls), 100000000, 0};
        r.source = "cpu";
        for (const auto& [name, count] : rows)
            r.rows.push_back(
                {name, 0, "call", std::uint64_t(count), std::uint64_t(count) * 1000000});
        return r.to_json();
    };
    // Its extension was built, but torch.relu did the work in every call.
    correctness_kernels(
        samples({{"_ZN2at6native12_GLOBAL__N_110relu_kernelEv (libtorch_cpu.so)", 40},
                 {"PyEval_EvalCode (python3.11)", 5}}));
    Verdict unused = run();
    EXPECT_EQ(unused.status, Status::rejected);
    EXPECT_NE(unused.reason.find("none of the candidate's own compiled code"), std::string::npos)
        << unused.reason;
    EXPECT_NE(unused.reason.find("(libtorch_cpu.so)"), std::string::npos) << unused.reason;

    // Its own code had the samples.
    correctness_kernels(samples({{"_Z12relu_forwardN2at6TensorE (./relu_ext/relu_ext.so)", 40},
                                 {"PyEval_EvalCode (python3.11)", 5}}));
    Verdict own = run();
    EXPECT_EQ(own.status, Status::correct) << own.reason;
    ASSERT_FALSE(own.kernels.empty());
    EXPECT_EQ(own.kernels[0].origin, "candidate");
    EXPECT_EQ(own.kernels[0].name, "relu_forward (./relu_ext/relu_ext.so)");

    // pybind11's glue in its module is not its work; a library loaded from elsewhere never is.
    correctness_kernels(
        samples({{"pybind11::cpp_function::dispatcher (./relu_ext/relu_ext.so)", 40},
                 {"relu_forward (relu_ext.so)", 40}}));
    EXPECT_EQ(run().status, Status::rejected);

    // Too few samples say nothing.
    correctness_kernels(samples({{"relu (libtorch_cpu.so)", 5}}));
    EXPECT_EQ(run().status, Status::correct);

    // A small share on a CPU is only a warning: nothing is knocked out there.
    correctness_kernels(
        samples({{"relu_forward (./relu_ext/relu_ext.so)", 1}, {"mm (libtorch_cpu.so)", 400}}));
    Verdict small = run();
    EXPECT_EQ(small.status, Status::correct) << small.reason;
    EXPECT_TRUE(judge.knocked_out.empty());
    bool warned = false;
    for (const auto& f : small.integrity) warned = warned || f.rule == "small_kernel_share";
    EXPECT_TRUE(warned);
}

TEST_F(Pipeline, KernelsNamedLikeTheCandidatesInALibraryNamespaceAreTheLibrarys) {
    // relu_kernel is the candidate's name, but at::native's is ATen's.
    correctness_kernels(kernels({{"_ZN2at6native11relu_kernelEPfi", "call", 1000}}));
    Verdict v = run();
    EXPECT_EQ(v.status, Status::rejected) << v.reason;
    // Triton's kernels are named as their functions are.
    correctness_kernels(kernels({{"add_kernel", "call", 1000}}));
    EXPECT_EQ(run().status, Status::correct);
}

TEST_F(Pipeline, WorkOutsideTheCallsIsNamed) {
    correctness_kernels(kernels({{"_Z11relu_kernelPKfPfi", "call", 1000},
                                 {"_Z11relu_kernelPKfPfi", "kbench", 800},
                                 {"late_kernel", "outside", 500}}));
    Verdict v = run();
    EXPECT_EQ(v.status, Status::correct);
    const Finding* outside = nullptr;
    for (const auto& f : v.integrity)
        if (f.rule == "work_outside_window") outside = &f;
    ASSERT_NE(outside, nullptr);
    EXPECT_NE(outside->detail.find("late_kernel x1"), std::string::npos) << outside->detail;
    EXPECT_NE(outside->detail.find("relu_kernel"), std::string::npos) << outside->detail;
}

TEST_F(Pipeline, KernelRecordsNotTakenAreSaidSo) {
    correctness_kernels(
        protocol::KernelsReported{false, "the device is a CPU", {}, 0, 0, 0}.to_json());
    Verdict v = run();
    EXPECT_EQ(v.status, Status::correct);
    ASSERT_TRUE(v.kernel_activity.is_object());
    EXPECT_FALSE(v.kernel_activity.value("collected", true));
    EXPECT_EQ(v.kernel_activity.value("why", std::string()), "the device is a CPU");
}

TEST_F(Pipeline, ATimeBelowTheMemoryFloorIsRejectedAndCorrectOnesCarryTheSpeedOfLight) {
    gpu_entry = {{"name", "test GPU"},
                 {"match", {"test"}},
                 {"memory_bandwidth_GBps", {{"datasheet", 1.0}}},  // 1 GB/s: 1 byte a ns
                 {"fp32_tflops", {{"datasheet", 1.0}}},
                 {"l2_bytes", 0}};
    // 4096 bytes at 1 GB/s: 4.096 us; the candidate's median is 100 us.
    Verdict ok = run();
    EXPECT_EQ(ok.status, Status::correct);
    ASSERT_TRUE(ok.floor.value("known", false));
    EXPECT_NEAR(ok.floor.value("byte_floor_us", 0.0), 4.096, 1e-9);
    EXPECT_NEAR(ok.floor.value("flop_floor_us", 0.0), 1.0, 1e-9);  // 1e6 FLOPs at 1 TFLOP/s
    EXPECT_NEAR(ok.floor.value("speed_of_light", 0.0), 4.096 / 100, 1e-6);

    // The same problem with 100 MB of inputs: 100 ms of traffic, against a 100 us median.
    judge.baseline_reply = protocol::reply_json(timed_baseline(json{{"flops", nullptr},
                                                                    {"bytes", 100000000},
                                                                    {"input_bytes", 99997952},
                                                                    {"parameter_bytes", 0},
                                                                    {"output_bytes", 2048}}));
    Verdict fast = run();
    EXPECT_EQ(fast.status, Status::rejected);
    EXPECT_NE(fast.reason.find("below_floor"), std::string::npos) << fast.reason;
    EXPECT_TRUE(fast.floor.value("flop_floor_us", json()).is_null());
}

}  // namespace
}  // namespace kbench::orchestrator
