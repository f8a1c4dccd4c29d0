#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "judge/compare.hpp"
#include "protocol/judge_messages.hpp"
#include "runtime/device.hpp"
#include "runtime/shared_tensor.hpp"
#include "runtime/torch_common.hpp"

namespace kbench::worker {

// The inputs of one call, made by the judge: values exactly as get_inputs() gave them (cast to
// the precision, on the device), never handed to any model.
struct CallInputs {
    CallInputs() = default;
    CallInputs(CallInputs&&) = default;
    CallInputs(const CallInputs&) = default;
    CallInputs& operator=(const CallInputs&) = default;
    // The tensors go before their pool: a pool released first empties its cache while they
    // still hold its blocks, which then stay reserved until the cache is emptied again (on a
    // transient problem, a checked timed call's inputs made again beside the dropped ones).
    CallInputs& operator=(CallInputs&& other) noexcept {
        if (this == &other) return *this;
        tensors.clear();
        values.clear();
        pool = std::move(other.pool);
        seed = other.seed;
        values = std::move(other.values);
        tensors = std::move(other.tensors);
        bytes = other.bytes;
        return *this;
    }

    // The request pool the tensors were made in (transient problems; first, so that it goes
    // last), or null.
    std::shared_ptr<RequestPool> pool;
    std::uint64_t seed = 0;
    std::vector<py::object> values;
    std::vector<at::Tensor> tensors;  // the tensor inputs among values (undefined for others)
    std::size_t bytes = 0;
};

// What the reference makes of one call's inputs.
struct ReferenceOutput {
    std::vector<at::Tensor> outputs;
    std::vector<bool> modifies;  // per input: whether the reference changes it in place
    std::size_t bytes = 0;
    std::string made_on;  // where the outputs were made, when they were moved since ("": there)
};

// An output's layout, as the reference gives it.
struct OutputShape {
    std::vector<std::int64_t> sizes;
    at::ScalarType dtype = at::kFloat;
};

// A reference program loaded in the judge, with its configuration.
struct ReferenceProblem {
    std::string key;
    std::string name;
    std::string code;  // the reference's program
    py::module_ module;
    py::object model;
    // Its parameters and buffers wait on the host while the reference's own sandbox makes its
    // outputs (the plan's reference_exports): model_to_host, model_to_device.
    bool model_on_host = false;
    py::list init_values;  // get_init_inputs() under the seed, for ModelNew(*init)
    at::ScalarType dtype = at::kFloat;
    std::string precision = "fp32";
    std::uint64_t seed = 42;
    int trials = 5;
    bool strict = true;
    // Strict mode makes inputs on the device, but on the host where making them there holds
    // large temporaries that do not fit (the plan's inputs_on_host).
    bool inputs_on_host = false;
    Tf32 tf32 = Tf32::off;  // the precision policy
    json precision_state;   // the judge's flags under it
    CompareSpec spec;
    std::vector<std::uint64_t> public_trial_seeds;  // KernelBench's, from the base seed
    std::vector<OutputShape> outputs;
    // What it needs on the device (its first call's), and the plan kbench evaluates it under.
    ProblemMemory memory;
    MemoryPlan plan;
    // Per input, whether the reference changed it in place on a call (its first, or any since):
    // the reference runs on copies of those, and on the judge's inputs as they are otherwise.
    std::vector<bool> modifies;
    double inputs_seconds = 0;
    // The fastest call of the reference seen so far, from its inputs to its outputs on the
    // device (0: none yet): what scaled deadlines scale.
    double call_seconds = 0;
    std::size_t trial_bytes = 0;
    // Calls on public seeds, kept: KernelBench's trials (its mode) and the baseline's inputs.
    std::map<std::uint64_t, std::pair<CallInputs, ReferenceOutput>> public_calls;
    std::map<std::string, protocol::BaselineTimed> baselines;
    // torch.compile's model by mode, with the seconds its compile took (kbench baseline compiles
    // in one request and times in the next, so that compiles can run beside each other).
    std::map<std::string, std::pair<py::object, double>> compiled;
    // The arbiter: the model at a wider precision (float64 for fp32, float32 for fp16 and bf16),
    // made at the first trial of a candidate that needs it, released with the candidate.
    py::object arbiter;
    std::string arbiter_device;
    // What one call of the reference does (kbench_worker.floor.count on the first public
    // trial's inputs): FLOPs and bytes, counted once, when first asked for.
    json work;
};

// The model to the host, its device memory back to the device (the judge holds neither the
// model nor its call while the reference's own sandbox makes the reference's outputs); and back
// to the device where the judge runs it itself (a fallback, the flop count, a baseline timed
// in the judge). Each does nothing where the model is there already.
void model_to_host(ReferenceProblem& p, const Device& device);
void model_to_device(ReferenceProblem& p, const Device& device);

// What arbitrates a precision: "float64" for fp32, "float32 (TF32 off)" for fp16 and bf16.
std::string arbiter_name(const std::string& precision);

// The reference's outputs for inputs at the arbiter's precision (rules.run_arbiter), made on
// the device or, when the device lacks the memory, on the CPU. Throws std::runtime_error with
// the reason when the reference cannot run at that precision (an op without a double kernel,
// random numbers drawn in forward, no memory anywhere); CudaError when the device failed.
std::vector<at::Tensor> run_arbiter(ReferenceProblem& p, const CallInputs& inputs,
                                    const Device& device);

// The device ran out of memory for the reference's own first call (its inputs or its model
// call): the problem does not fit there. `memory` holds what was measured before, with a call
// peak past the device's memory.
struct ProblemTooLarge : std::runtime_error {
    ProblemTooLarge(const std::string& what, ProblemMemory m)
        : std::runtime_error(what), memory(m) {}
    ProblemMemory memory;
};

// Loads the reference program and constructs its model; throws py::error_already_set when the
// reference itself fails, ProblemTooLarge when the device lacks the memory for its first call.
std::unique_ptr<ReferenceProblem> load_reference(const protocol::PrepareProblem& request,
                                                 const Device& device);

// get_inputs() under seed, as KernelBench makes inputs; pooled: in a RequestPool of their own
// (a transient problem's request's inputs, handed to a sandbox where they lie).
CallInputs make_call_inputs(ReferenceProblem& p, std::uint64_t seed, const Device& device,
                            bool pooled = false);

// The reference's outputs for inputs. It reads them as they are where every call so far left
// them unchanged (on a problem of 6 GiB inputs a copy a call is 6 GiB of the judge's memory);
// should it change them after all, they are made again from their seed, and the problem's
// later calls run on copies. run_reference_on_copy always copies (inputs kept for reuse).
ReferenceOutput run_reference(ReferenceProblem& p, CallInputs& inputs, const Device& device);
ReferenceOutput run_reference_on_copy(ReferenceProblem& p, const CallInputs& inputs,
                                      const Device& device);

// Drops the kept reference calls when they, and `adding` bytes more, hold more than the device's
// allowance for them (public_call keeps one call at least, which on a large problem is far
// more): the judge calls it between requests, so that no call outlives the request that needed
// it, and public_call before it keeps another.
void trim_kept_calls(ReferenceProblem& p, const Device& device, std::size_t adding = 0);

// The inputs and reference outputs of a call on a public seed, computed once.
const std::pair<CallInputs, ReferenceOutput>& public_call(ReferenceProblem& p, std::uint64_t seed,
                                                          const Device& device);

// The inputs the baseline is timed on, as argument tuples of copies: the base seed's (the
// reference harness's protocol), else up to three of KernelBench's trials, as many as fit in an
// eighth of the device's memory.
std::vector<py::tuple> baseline_inputs(ReferenceProblem& p, const Device& device, bool kernelbench);

// The reference's work on the first public trial's inputs (cached in p.work): {"flops",
// "bytes", "input_bytes", "parameter_bytes", "output_bytes", "flop_error", "by_op"}; flops is
// null, with the reason, when the counter failed.
const json& reference_work(ReferenceProblem& p, const Device& device);

}  // namespace kbench::worker
