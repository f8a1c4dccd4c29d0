#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace kbench {

using json = nlohmann::json;

constexpr std::uint64_t kGiB = std::uint64_t(1) << 30;
constexpr std::uint64_t kMiB = std::uint64_t(1) << 20;

// What one problem needs on a device, measured by the judge with the problem's first call: one
// call's tensor inputs and outputs, the model's parameters and buffers, and the most one call of
// the reference holds beyond its inputs and parameters (its outputs included: never less).
struct ProblemMemory {
    std::uint64_t inputs = 0;
    std::uint64_t outputs = 0;
    std::uint64_t parameters = 0;
    std::uint64_t call_peak = 0;
    bool modifies_inputs = false;  // the reference changes an input: it runs on a copy
    // The most making one call's inputs on the device held beyond the inputs themselves (a
    // get_inputs() that builds a large temporary); strict mode makes them there.
    std::uint64_t making = 0;

    json to_json() const;
    static ProblemMemory from_json(const json& j);  // strict (Fields)
};

// Each party's share of the device for one problem, in bytes, as kbench's judge and sandboxes
// use it while sandboxes are attached (docs/memory.md says what each holds and why):
// - the judge: one request's inputs and outputs (transient calls, of 64 MiB or more: per
//   request; smaller ones: buffers kept for each sandbox, one call's inputs and outputs of the
//   judge's own), the reference's model and call where the judge makes the reference's outputs
//   (not where the reference's own sandbox does: reference_exports), and a working allowance
//   (comparisons in chunks, the cache flush, batched calls, reference calls kept for reuse); a
//   reply is kept as a keyed digest, not a copy;
// - each sandbox: its parameters and one call's peak (the candidate's estimated by the
//   reference's own);
// - a CUDA context for each of the three processes.
// Arbitration (the reference at a wider precision, for values that missed the tolerance) runs in
// the judge on the device where it fits beside every party's share, on the host otherwise.
struct MemoryPlan {
    ProblemMemory problem;
    bool rounds = true;  // the reference's own sandbox is there (kbench's protocol)
    // Rounds were asked for, but only the plan without them fits the device: the baseline is
    // timed in the judge, apart from the candidate, for this problem (plan_fitting).
    bool rounds_dropped = false;
    std::uint64_t device = 0;        // what the device offers: its memory, or --device-memory
    std::uint64_t judge = 0;         // the judge's torch allocations and shared buffers
    std::uint64_t judge_shared = 0;  // of which shared buffers (outside PyTorch's allocator)
    bool transient = false;          // each request's inputs and outputs live for that request only
    bool outputs_on_host = false;  // transient, and only so it fits: reference outputs on the host
    // Strict mode makes each call's inputs on the device, with the temporaries of get_inputs()
    // (`making`) in the judge's share; on the host, then moved, only where those do not fit
    // (level 1 problem 93 builds an 8 GiB int64 mask for a 1 GiB one): seconds a call.
    bool inputs_on_host = false;
    // With rounds, for a reference that leaves its inputs alone (strict mode): the reference's
    // own sandbox makes the reference's outputs in its share and the judge maps them; the
    // judge's model waits on the host meanwhile.
    bool reference_exports = false;
    std::uint64_t reference_sandbox = 0;
    std::uint64_t candidate_sandbox = 0;  // its estimate; it may use whatever the others leave
    std::uint64_t contexts = 0;           // CUDA contexts, all processes together
    // The arbiter: the model, one call's inputs and one call, each twice as wide.
    std::uint64_t arbiter = 0;

    std::uint64_t total() const { return judge + reference_sandbox + candidate_sandbox + contexts; }
    bool fits() const { return total() <= device; }
    bool arbiter_on_device() const { return total() + arbiter <= device; }
    // What the candidate's sandbox may use: the device less the others' shares and contexts.
    std::uint64_t candidate_allowance() const;
    // "needs 19.2 GiB on the device (judge 12.1 GiB, ...); the device has 16.0 GiB"; "needs at
    // least" where the call peak is a bound (the reference's first call ran out of memory).
    std::string needs_text(bool at_least = false) const;
    json to_json() const;
};

// The judge's working allowance beyond the call's own tensors: comparisons in chunks, the digest's
// table and the cache flush (about 384 MiB), the calls a timed request batches beyond its first
// (kBatchBytes of inputs and outputs in all), and the reference calls it keeps for reuse
// (kKeptCallsBytes).
constexpr std::uint64_t kKeptCallsBytes = 256 * kMiB;
constexpr std::uint64_t kBatchBytes = 256 * kMiB;
constexpr std::uint64_t kCompareBytes = 384 * kMiB;
constexpr std::uint64_t kJudgeWorkingBytes = kCompareBytes + kBatchBytes + kKeptCallsBytes;
// Calls of at least this many bytes of inputs and outputs get buffers per request (transient).
constexpr std::uint64_t kTransientBytes = 64 * kMiB;
// A CUDA context with PyTorch's kernels and cuBLAS's workspace loaded (about 500-600 MiB on an
// H100 with CUDA 13).
constexpr std::uint64_t kContextBytes = 640 * kMiB;

// get_inputs() temporaries beyond this that do not fit the device make strict mode's inputs on
// the host (MemoryPlan::inputs_on_host).
constexpr std::uint64_t kMakingOnDevice = 256 * kMiB;

// strict: kbench's mode, where the reference's own sandbox may make the reference's outputs
// (reference_exports); otherwise the judge makes them. The judge's preparation (the first call,
// the flop count) comes before any sandbox, alone on the device, and is not in these shares.
MemoryPlan plan_memory(const ProblemMemory& problem, std::uint64_t device_bytes, bool rounds,
                       bool strict = true);

// plan_memory, but where rounds were asked for and their plan does not fit the device (or fits
// only with inputs made on the host) while the plan without them does (with inputs made on the
// device, where rounds fit only with them on the host): the plan without them, rounds_dropped.
// One sandbox, the baseline timed in the judge, as the reference harness does (two sandboxes
// each keeping a call's working memory: level 1 problem 41 under 24 GiB). The judge and the
// orchestrator both plan with it on a GPU.
MemoryPlan plan_fitting(const ProblemMemory& problem, std::uint64_t device_bytes, bool rounds,
                        bool strict = true);

// What the judge may hold of the device for a problem: 1.25 x (one call's inputs and outputs)
// + 1 GiB.
std::uint64_t judge_bound(const ProblemMemory& problem);

// "19.2 GiB", "640 MiB"
std::string bytes_text(std::uint64_t bytes);

}  // namespace kbench
