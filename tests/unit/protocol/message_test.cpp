// The typed protocol: every message survives its own encoding, and a message that lacks a field
// or carries one of the wrong type is refused, never read with a default.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/error.hpp"
#include "protocol/judge_messages.hpp"
#include "protocol/sandbox_messages.hpp"
#include "protocol/zygote_messages.hpp"

namespace kbench::protocol {
namespace {

// Every field of a message is required: dropping any one of them must be refused.
template <typename T>
void expect_every_field_required(const json& full, const std::string& name) {
    ASSERT_NO_THROW(T::from_json(full)) << name;
    for (const auto& [key, value] : full.items()) {
        json partial = full;
        partial.erase(key);
        EXPECT_THROW(T::from_json(partial), ProtocolError) << name << " without " << key;
    }
}

TensorRef tensor() {
    return {3, 256, {2, 4}, {4, 1}, "float32"};
}

TEST(Protocol, SandboxMessagesRoundTrip) {
    CallBatch b;
    b.nonce = 99;
    b.new_slots = {{3, {"memfd", 0, 64}}};
    b.drop_slots = {1, 2};
    Argument value;
    value.value = 7;
    Argument t;
    t.is_tensor = true;
    t.tensor = tensor();
    b.calls = {{{t, value}, {tensor()}}};
    b.timed = true;
    b.export_outputs = true;
    json wire = request_json(b);
    EXPECT_EQ(op_of(wire), Op::call);
    CallBatch back = CallBatch::from_json(wire);
    EXPECT_EQ(back.nonce, 99u);
    EXPECT_TRUE(back.export_outputs);
    EXPECT_EQ(back.new_slots[0].buffer.kind, "memfd");
    EXPECT_EQ(back.calls[0].args[1].value, 7);
    EXPECT_TRUE(back.calls[0].args[0].is_tensor);
    EXPECT_EQ(back.calls[0].outputs[0].sizes, (std::vector<std::int64_t>{2, 4}));
    expect_every_field_required<CallBatch>(b.to_json(), "call request");

    CallResult r{12.5,
                 20.0,
                 "tensor",
                 true,
                 {{true, true, "torch.Tensor", {2, 4}, "float32", "cpu", -1, true}}};
    CallsDone done{99, {r}, json{{"tf32_matmul", false}, {"tf32_conv", false}}};
    CallsDone done_back = CallsDone::from_json(reply_json(done));
    EXPECT_EQ(done_back.precision, done.precision);
    expect_every_field_required<CallsDone>(done.to_json(), "call reply");
    EXPECT_EQ(done_back.results[0].event_us, 12.5);
    EXPECT_TRUE(done_back.results[0].outputs[0].copied);
    expect_every_field_required<CallResult>(r.to_json(), "call result");
    expect_every_field_required<OutputReport>(r.outputs[0].to_json(), "output report");
    // The reference's own sandbox's outputs, left where its call made them.
    OutputReport exported = r.outputs[0];
    exported.exported = Buffer{"cuda_fd", 0, 1 << 21};
    exported.exported_offset = 512;
    OutputReport exported_back = OutputReport::from_json(exported.to_json());
    ASSERT_TRUE(exported_back.exported);
    EXPECT_EQ(exported_back.exported->kind, "cuda_fd");
    EXPECT_EQ(exported_back.exported_offset, 512u);
    EXPECT_FALSE(OutputReport::from_json(r.outputs[0].to_json()).exported);
    expect_every_field_required<OutputReport>(exported.to_json(), "output report");
    json odd = exported.to_json();
    odd["exported"]["buffer"]["kind"] = "ipc";
    EXPECT_THROW(OutputReport::from_json(odd), ProtocolError);
    expect_every_field_required<TensorRef>(tensor().to_json(), "tensor");
}

TEST(Protocol, JudgeMessagesRoundTrip) {
    CorrectnessChecked c{5, 4, 0.5, std::numeric_limits<double>::infinity(), "trial 2: off"};
    CorrectnessChecked back = CorrectnessChecked::from_json(c.to_json());
    EXPECT_EQ(back.trials_passed, 4);
    EXPECT_TRUE(std::isinf(back.max_rel_diff));
    expect_every_field_required<CorrectnessChecked>(c.to_json(), "correctness reply");
    c.arbitration = {{"arbiter", "float64"}, {"trials", 1}, {"passed", 1}};
    EXPECT_EQ(CorrectnessChecked::from_json(c.to_json()).arbitration, c.arbitration);
    json not_object = c.to_json();
    not_object["arbitration"] = "float64";
    EXPECT_THROW(CorrectnessChecked::from_json(not_object), ProtocolError);

    Measured m{{10, 11, 12}, true, 3, 6, 0, "median"};
    CandidateTimed timed{m, {{"threads_started", Severity::warn, "1 thread"}}, 2, ""};
    CandidateTimed timed_back = CandidateTimed::from_json(timed.to_json());
    EXPECT_EQ(timed_back.measured.samples_us.size(), 3u);
    EXPECT_EQ(timed_back.findings[0].rule, "threads_started");
    EXPECT_DOUBLE_EQ(timed_back.measured.summary().median_us, 11);
    expect_every_field_required<Measured>(m.to_json(), "measurement");

    TimingRequest request{TimingConfig{}, 30};
    EXPECT_EQ(op_of(request_json(request)), Op::timing);
    expect_every_field_required<TimingRequest>(request.to_json(), "timing request");
    expect_every_field_required<Overhead>(Overhead{1, 2, 3}.to_json(), "overhead");
}

TEST(Protocol, ZygoteMessagesRoundTrip) {
    ForkRequest f;
    f.role = "sandbox";
    f.device = DeviceKind::cpu;
    f.cwd = "/tmp/x";
    f.env = {{"A", "1"}};
    f.lockdown.writable = {"/tmp/x"};
    ForkRequest back = ForkRequest::from_json(request_json(f));
    EXPECT_EQ(back.env.at("A"), "1");
    EXPECT_EQ(back.lockdown.writable[0], "/tmp/x");
    json other_role = f.to_json();
    other_role["role"] = "judge";
    EXPECT_THROW(ForkRequest::from_json(other_role), ProtocolError);
    Reaped r{true, false, 0, 11, {"sleep"}, {"SIGSTOP from 12"}};
    expect_every_field_required<Reaped>(r.to_json(), "reap reply");
    Built b{BuildOutcome::compile_error, "nvcc: error"};
    EXPECT_EQ(Built::from_json(b.to_json()).outcome, BuildOutcome::compile_error);
    // Only kbench's own deadline makes a timeout: a builder cannot claim one.
    json timed_out = b.to_json();
    timed_out["outcome"] = "timeout";
    EXPECT_THROW(Built::from_json(timed_out), ProtocolError);
}

TEST(Protocol, ARepliesIsAPayloadOrAFaultAndNothingElse) {
    Health h{true, ""};
    auto ok = read_reply<Health>(reply_json(h), "health reply");
    ASSERT_TRUE(ok.ok());
    EXPECT_TRUE(ok.value->healthy);
    auto fault =
        read_reply<Health>(fault_json({FaultKind::candidate_raised, "boom", ""}), "health reply");
    ASSERT_FALSE(fault.ok());
    EXPECT_EQ(fault.fault->kind, FaultKind::candidate_raised);
    // No "ok" at all, or an "ok" that is not a boolean, is not a reply.
    EXPECT_THROW(read_reply<Health>(json{{"healthy", true}, {"error", ""}}, "r"), ProtocolError);
    EXPECT_THROW(read_reply<Health>(json{{"ok", 1}, {"healthy", true}, {"error", ""}}, "r"),
                 ProtocolError);
    // A success that lacks its payload's fields is refused.
    EXPECT_THROW(read_reply<CorrectnessChecked>(json{{"ok", true}, {"trials", 5}}, "r"),
                 ProtocolError);
}

TEST(Protocol, ACorrectnessReplyCannotClaimMoreThanItRan) {
    json j = CorrectnessChecked{5, 5, 0, 0, ""}.to_json();
    j["trials_passed"] = 6;
    EXPECT_THROW(CorrectnessChecked::from_json(j), ProtocolError);
    j["trials_passed"] = 3;  // failures need a reason
    EXPECT_THROW(CorrectnessChecked::from_json(j), ProtocolError);
}

TEST(Protocol, StepTimesAreFiniteAndNotNegative) {
    CorrectnessChecked c{5, 5, 0, 0, ""};
    c.steps_s = {{"inputs", 0.25}, {"requests", 1.5}};
    EXPECT_EQ(CorrectnessChecked::from_json(c.to_json()).steps_s, c.steps_s);
    json j = c.to_json();
    j["steps_s"]["inputs"] = -1.0;
    EXPECT_THROW(CorrectnessChecked::from_json(j), ProtocolError);
    j["steps_s"]["inputs"] = "inf";
    EXPECT_THROW(CorrectnessChecked::from_json(j), ProtocolError);
    j["steps_s"] = json::array();
    EXPECT_THROW(CorrectnessChecked::from_json(j), ProtocolError);
    CandidateTimed t;
    t.measured = {{1, 2}, true, 0, 2, 0, "median"};
    t.steps_s = {{"rounds", 2.0}};
    EXPECT_EQ(CandidateTimed::from_json(t.to_json()).steps_s, t.steps_s);
}

TEST(Protocol, AMeasurementNeedsFiniteSamples) {
    json j = Measured{{1, 2}, true, 0, 2, 0, "median"}.to_json();
    j["samples_us"] = json::array();
    EXPECT_THROW(Measured::from_json(j), ProtocolError);
    j["samples_us"] = json::array({1.0, "nan"});
    EXPECT_THROW(Measured::from_json(j), ProtocolError);
    j["samples_us"] = json::array({1.0, -3.0});
    EXPECT_THROW(Measured::from_json(j), ProtocolError);
}

TEST(Protocol, EveryFaultMapsToOneDecision) {
    auto status = [](FaultKind kind) { return decision_of({kind, "m"}, "why").status; };
    EXPECT_EQ(status(FaultKind::candidate_load), Status::load_error);
    EXPECT_EQ(status(FaultKind::candidate_build), Status::compile_error);
    EXPECT_EQ(status(FaultKind::candidate_raised), Status::runtime_error);
    EXPECT_EQ(status(FaultKind::candidate_overran), Status::timeout);
    EXPECT_EQ(status(FaultKind::sandbox_ended), Status::crash);
    EXPECT_EQ(status(FaultKind::protocol_violation), Status::rejected);
    EXPECT_EQ(status(FaultKind::integrity), Status::rejected);
    EXPECT_EQ(status(FaultKind::reference), Status::load_error);
    EXPECT_EQ(status(FaultKind::harness), Status::infra_error);
    EXPECT_EQ(status(FaultKind::device), Status::infra_error);
    EXPECT_EQ(decision_of({FaultKind::integrity, "m", "decoy_kernel"}, "why").rule, "decoy_kernel");
    EXPECT_EQ(decision_of({FaultKind::protocol_violation, "m"}, "why").rule, "protocol_violation");
    for (auto kind :
         {FaultKind::candidate_load, FaultKind::candidate_build, FaultKind::candidate_raised,
          FaultKind::candidate_overran, FaultKind::sandbox_ended, FaultKind::protocol_violation,
          FaultKind::integrity, FaultKind::reference, FaultKind::harness, FaultKind::device}) {
        Decision d = decision_of({kind, "m"}, "why");
        EXPECT_NE(d.status, Status::correct);
        EXPECT_EQ(d.reason, "why");
        // The candidate is blamed exactly for its own kinds of fault.
        EXPECT_EQ(d.blame == Blame::candidate, is_candidates(kind)) << to_string(kind);
        EXPECT_EQ(parse_fault_kind(to_string(kind)), kind);
    }
    EXPECT_THROW(parse_fault_kind("oops"), ProtocolError);
    EXPECT_THROW(op_of(json{{"op", "launch_missiles"}}), ProtocolError);
}

TEST(Protocol, KernelRecordsMustAgreeWithTheJudgesClockAndCalls) {
    KernelsReported r{true, "", {{"_Z11relu_kernelPfi", 7, "call", 5, 40000}}, 5, 900000, 0};
    EXPECT_EQ(r.disagreement(5, 1000.0), "") << "900 us of windows in 1000 us of requests";
    EXPECT_NE(r.disagreement(4, 1000.0).find("count 5 model calls where the judge made 4"),
              std::string::npos);
    r.call_ns = 5000000;  // 5 ms of windows in 1 ms of the judge's clock
    EXPECT_NE(r.disagreement(5, 1000.0).find("more than the judge's clock allowed"),
              std::string::npos);
    KernelsReported none{false, "kernel records were not started", {}, 0, 0, 0};
    EXPECT_EQ(none.disagreement(5, 1.0), "") << "nothing recorded, nothing to check";
    EXPECT_EQ(KernelsReported::from_json(r.to_json()).to_json(), r.to_json());
}

TEST(Protocol, CpuSamplesWhoseSignalsNeverCameAreNotBelieved) {
    // 10 samples taken, 490 periods of CPU time run with the signal kept out: SIGPROF blocked.
    KernelsReported r{true, "", {{"mm (libtorch_cpu.so)", 0, "call", 10, 500000}}, 5, 900000, 490};
    r.source = "cpu";
    EXPECT_NE(r.disagreement(5, 1e6).find("490 of the 500 samples of its threads"),
              std::string::npos);
    r.dropped = 20;  // a few lost at the ends of calls
    EXPECT_EQ(r.disagreement(5, 1e6), "");
    r.source = "gpu";  // CUPTI's dropped records only make the table partial
    r.dropped = 490;
    EXPECT_EQ(r.disagreement(5, 1e6), "");
    r.source = "tpu";
    EXPECT_THROW(KernelsReported::from_json(r.to_json()), ProtocolError);
}

}  // namespace
}  // namespace kbench::protocol
