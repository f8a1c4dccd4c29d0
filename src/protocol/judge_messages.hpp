#pragma once

// Between the orchestrator (kbench) and a judge. The judge is trusted: it holds the reference,
// makes every input, owns the clock around every timed request and takes every output itself.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "core/memory_plan.hpp"
#include "core/verdict.hpp"
#include "protocol/message.hpp"

namespace kbench::protocol {

// Where a judge's reply spent its time, step by step (seconds; `-v` shows it): nothing is
// decided on it.
using StepSeconds = std::map<std::string, double>;
json steps_json(const StepSeconds& steps);
StepSeconds steps_from(const json& j, const std::string& where);

struct JudgeHello {
    json device;  // what the judge's device says of itself (name, capability, memory, ...)
    std::string torch, cuda, python;

    json to_json() const;
    static JudgeHello from_json(const json& j);
};

// Load a reference program and its model under a configuration.
struct PrepareProblem {
    static constexpr Op kOp = Op::prepare;
    std::string name, code, sha256;
    std::uint64_t seed = 42;
    int trials = 5;
    std::string precision = "fp32";
    std::string mode = "strict";
    double atol = 1e-4, rtol = 1e-4;
    Tf32 tf32 = Tf32::off;  // the precision policy
    // The device memory the judge plans within (--device-memory; 0: the device's own), and
    // whether the reference's own sandbox will be there too (rounds).
    std::uint64_t device_memory = 0;
    bool rounds = true;

    json to_json() const;
    static PrepareProblem from_json(const json& j);
};

struct ProblemPrepared {
    bool cached = false;             // the judge already held this problem
    double inputs_seconds = 0;       // one get_inputs() call
    std::uint64_t trial_bytes = 0;   // one call's inputs and reference outputs
    json precision;                  // the judge's precision flags under the policy
    ProblemMemory memory;            // what the problem needs, measured with its first call
    std::uint64_t device_bytes = 0;  // the device's memory, as the judge sees it

    json to_json() const;
    static ProblemPrepared from_json(const json& j);
};

// Take over a sandbox (its socket rides on the request) and measure the protocol's cost with
// it before it loads anything.
struct AttachRequest {
    static constexpr Op kOp = Op::attach;
    std::int64_t sandbox_pid = 0;  // as the judge sees it; signals from it are named
    double limit_s = 0;
    // Deadlines of requests of model calls, scaled to the reference's time (PhaseLimits).
    double call_factor = 0;
    double call_floor_s = 0;
    double first_call_s = 0;
    // The reference's own sandbox, beside the candidate's, which serves the baseline's requests
    // in rounds (kbench's protocol, --rounds); false: the candidate's.
    bool reference = false;

    json to_json() const;
    static AttachRequest from_json(const json& j);
};

// What a request costs with nothing to compute: the overhead the judge's clock allows for.
struct Overhead {
    double fixed_us = 0;     // per request
    double per_call_us = 0;  // per call within a request
    double spread_us = 0;    // how much single requests vary around that

    json to_json() const;
    static Overhead from_json(const json& j);
};

struct SandboxAttached {
    Overhead overhead;

    json to_json() const;
    static SandboxAttached from_json(const json& j);
};

struct LoadRequest {
    static constexpr Op kOp = Op::load;
    std::string candidate_file;
    double limit_s = 0;
    bool reference = false;  // for the reference's own sandbox (AttachRequest)

    json to_json() const;
    static LoadRequest from_json(const json& j);
};

struct CorrectnessRequest {
    static constexpr Op kOp = Op::correctness;
    double limit_s = 0;

    json to_json() const;
    static CorrectnessRequest from_json(const json& j);
};

struct CorrectnessChecked {
    int trials = 0;
    int trials_passed = 0;
    double max_abs_diff = 0;
    double max_rel_diff = 0;
    std::string failure;  // the first failing trial's reason; empty when all passed
    // Trials that missed the tolerance, judged again against the reference at a wider
    // precision (strict mode): null when no trial needed it.
    json arbitration;
    // The kernels the sandbox ran meanwhile (a KernelsReported), or null.
    json kernels;
    StepSeconds steps_s;
    json memory;  // each party's device memory so far (the verdict's `memory`), or null

    json to_json() const;
    static CorrectnessChecked from_json(const json& j);
};

// One call on a correctness input with the candidate's own kernels (by name) replaced by an
// empty kernel: do its outputs depend on them? Asked where they took a negligible share of
// the kernel time (rule decoy_kernel).
struct KnockoutRequest {
    static constexpr Op kOp = Op::knockout;
    std::vector<std::string> names;
    double limit_s = 0;

    json to_json() const;
    static KnockoutRequest from_json(const json& j);
};

struct KnockoutChecked {
    bool done = false;           // the call ran with launches replaced and none failing
    std::string why;             // when not done
    std::uint64_t replaced = 0;  // launches replaced
    // The outputs differ from the reference's (beyond the tolerance, or not finite), or the call
    // raised: the candidate's kernels contribute to them.
    bool changed = false;
    std::string how;  // what changed, or what stayed equal
    json kernels;     // the knockout call's kernel records (a KernelsReported), or null

    json to_json() const;
    static KnockoutChecked from_json(const json& j);
};

// Samples of one measurement, as the judge's clock allowed them.
struct Measured {
    std::vector<double> samples_us;
    bool converged = false;
    int warmup_calls = 0;
    std::uint64_t calls = 0;
    int outside_stream_samples = 0;  // samples where the launch stream's events missed work
    std::string statistic = "median";

    json to_json() const;
    static Measured from_json(const json& j);
    // The summary a verdict carries.
    TimingResult summary() const;
};

struct TimingRequest {
    static constexpr Op kOp = Op::timing;
    TimingConfig timing;
    double limit_s = 0;

    json to_json() const;
    static TimingRequest from_json(const json& j);
};

struct CandidateTimed {
    Measured measured;
    std::vector<Finding> findings;
    std::uint64_t checked_calls = 0;  // timed calls whose outputs were compared
    std::string failure;              // a checked call's failure; empty when all passed
    json arbitration;                 // checked calls judged at a wider precision, or null
    json kernels;                     // the kernels the sandbox ran meanwhile, or null
    json reference_kernels;  // with rounds: the kernels the reference's own sandbox ran, or null
    // kbench's protocol with rounds: the baseline, timed in its own sandbox in requests
    // alternating with the candidate's, and each round's ratio (the median of the baseline's
    // samples in the round over the candidate's).
    std::optional<Measured> baseline;
    std::vector<double> round_ratios;
    StepSeconds steps_s;
    json memory;  // as in CorrectnessChecked

    json to_json() const;
    static CandidateTimed from_json(const json& j);
};

using DetachRequest = Bare<Op::detach>;
using HealthRequest = Bare<Op::health>;
using ExitRequest = Bare<Op::exit>;

struct BaselineRequest {
    static constexpr Op kOp = Op::baseline;
    TimingConfig timing;
    // false: the reference's precision flags and work only (its time came from rounds
    // alternating with the candidate's, so timing it apart again would be time spent for nothing)
    bool time = true;
    // "": the reference as it is (eager); else torch.compile's mode ("default", "max-autotune",
    // ...): the judge compiles the reference first, outside the timing
    std::string compile;

    json to_json() const;
    static BaselineRequest from_json(const json& j);
};

struct BaselineTimed {
    std::optional<Measured> measured;  // none when the request said not to time it
    json precision;                    // the judge's precision flags while it timed the reference
    json work;                         // one call's FLOPs and bytes (reference_work), for the floor
    double compile_s = 0;  // what compiling (and the first call) took, with a compile mode

    json to_json() const;
    static BaselineTimed from_json(const json& j);
};

// The prepared reference at its working precision against itself at the arbiter's (float64 for
// fp32), on the first `trials` of KernelBench's trial inputs: how ill-conditioned it is.
struct AuditRequest {
    static constexpr Op kOp = Op::audit;
    int trials = 2;

    json to_json() const;
    static AuditRequest from_json(const json& j);
};

struct Audited {
    int trials = 0;
    std::string arbiter;      // "float64", or "float32 (TF32 off)" for fp16 and bf16
    std::string device;       // where the arbiter ran
    double max_abs_diff = 0;  // the working-precision reference against the arbiter
    double max_rel_diff = 0;
    std::uint64_t mismatched = 0;  // values beyond the tolerance
    std::uint64_t values = 0;
    std::string worst;    // the first mismatching trial's description; empty if none
    std::string skipped;  // why the reference could not run at the arbiter's precision
    double seconds = 0;
    // The reference over every public trial seed: {"seeds", "flags": [...], "constant_output",
    // "zero_passes", "nondeterministic", "max_abs_output", "spread", "repeat_diff",
    // "zero_pass_share", "detail"}; flags name what a candidate could exploit.
    json health;
    json work;  // one call's FLOPs and bytes (reference_work)

    json to_json() const;
    static Audited from_json(const json& j);
};

struct Health {
    bool healthy = false;
    std::string error;

    json to_json() const;
    static Health from_json(const json& j);
};

json finding_json(const Finding& f);
Finding finding_from(const json& j);

}  // namespace kbench::protocol
