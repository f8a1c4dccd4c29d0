#include "core/memory_plan.hpp"

#include <algorithm>
#include <cstdio>

#include "core/fields.hpp"

namespace kbench {

json ProblemMemory::to_json() const {
    return json{{"inputs", inputs},
                {"outputs", outputs},
                {"parameters", parameters},
                {"call_peak", call_peak},
                {"modifies_inputs", modifies_inputs},
                {"making", making}};
}

ProblemMemory ProblemMemory::from_json(const json& j) {
    Fields f(j, "problem memory");
    return {f.count("inputs"),    f.count("outputs"),        f.count("parameters"),
            f.count("call_peak"), f.flag("modifies_inputs"), f.count("making")};
}

MemoryPlan plan_memory(const ProblemMemory& problem, std::uint64_t device_bytes, bool rounds,
                       bool strict) {
    MemoryPlan plan;
    plan.problem = problem;
    plan.rounds = rounds;
    plan.device = device_bytes;
    const std::uint64_t in = problem.inputs, out = problem.outputs;
    const std::uint64_t call = std::max(problem.call_peak, out);
    const std::uint64_t copy = problem.modifies_inputs ? in : 0;
    plan.reference_sandbox = rounds ? problem.parameters + call : 0;
    plan.candidate_sandbox = problem.parameters + call;
    plan.contexts = kContextBytes * (rounds ? 3 : 2);
    plan.transient = in + out >= kTransientBytes;
    // With rounds, in strict mode, for a reference that leaves its inputs alone: the
    // reference's own sandbox makes the reference's outputs in its share, and the judge maps
    // them; its model then waits on the host while sandboxes are attached. The judge holds
    // inputs and the candidate's outputs, neither the reference's call nor its parameters.
    plan.reference_exports = rounds && strict && !problem.modifies_inputs;
    const std::uint64_t model = plan.reference_exports ? 0 : problem.parameters;
    if (plan.transient) {
        // Per request: the inputs, made in memory of their own that the sandbox maps where they
        // lie, and the outputs' buffers, gone when the request's checks are done; so at most one
        // request's, of either sandbox, at a time. Without exports the reference's call runs in
        // the judge before the request (or, for a timed call checked after it, on inputs made
        // again from their seed), so the judge holds the inputs, the reference's call and the
        // outputs' buffers; where that does not fit the device, the reference's outputs (and a
        // checked call's outputs) wait on the host instead (outputs_on_host: slower, one copy
        // each way per check).
        plan.judge_shared = out;
        std::uint64_t base = model + in + copy + kJudgeWorkingBytes;
        plan.judge = base + (plan.reference_exports ? 0 : call) + out;
        if (!plan.fits() && !plan.reference_exports) {
            plan.outputs_on_host = true;
            plan.judge = base + std::max(call, out);
        }
    } else {
        // Buffers kept from request to request: the candidate's sandbox's and with rounds the
        // reference's own; one call's inputs of the judge's own, copied in once the clock has
        // started, with its reference outputs; the reference's call where the judge makes it;
        // replies kept as keyed digests, not copies.
        plan.judge_shared = (in + out) * (rounds ? 2 : 1);
        plan.judge = plan.judge_shared + model + in + copy + (plan.reference_exports ? out : call) +
                     kJudgeWorkingBytes;
    }
    // Making a call's inputs on the device: what the judge holds then, with the temporaries of
    // get_inputs(). A transient request's are made before anything else of the request's
    // exists: beside them only the comparisons' allowance. Where that does not fit the device,
    // they are made on the host (slow: seconds a call for gigabytes of random numbers).
    const std::uint64_t beside =
        plan.transient ? kCompareBytes : plan.judge_shared + kJudgeWorkingBytes;
    const std::uint64_t without = plan.judge;
    const std::uint64_t making = model + in + copy + problem.making + beside;
    plan.judge = std::max(without, making);
    if (!plan.fits() && making > without && problem.making > kMakingOnDevice) {
        plan.inputs_on_host = true;
        plan.judge = std::max(without, model + in + copy + beside);
    }
    plan.arbiter = 2 * (problem.parameters + in + call);
    return plan;
}

MemoryPlan plan_fitting(const ProblemMemory& problem, std::uint64_t device_bytes, bool rounds,
                        bool strict) {
    // In order: rounds; one sandbox (rounds dropped); rounds with inputs made on the host;
    // one sandbox with inputs made on the host.
    MemoryPlan plan = plan_memory(problem, device_bytes, rounds, strict);
    if (!rounds || (plan.fits() && !plan.inputs_on_host)) return plan;
    MemoryPlan one = plan_memory(problem, device_bytes, false, strict);
    if (!one.fits() || (plan.fits() && one.inputs_on_host)) return plan;
    one.rounds_dropped = true;
    return one;
}

std::uint64_t judge_bound(const ProblemMemory& problem) {
    return (problem.inputs + problem.outputs) * 5 / 4 + kGiB;
}

std::uint64_t MemoryPlan::candidate_allowance() const {
    std::uint64_t others = judge + reference_sandbox + contexts;
    return device > others ? device - others : 0;
}

std::string bytes_text(std::uint64_t bytes) {
    char text[32];
    if (bytes >= kGiB)
        std::snprintf(text, sizeof text, "%.1f GiB", double(bytes) / double(kGiB));
    else
        std::snprintf(text, sizeof text, "%.0f MiB", double(bytes) / double(kMiB));
    return text;
}

std::string MemoryPlan::needs_text(bool at_least) const {
    std::string out = std::string(at_least ? "needs at least " : "needs ") + bytes_text(total()) +
                      " on the device (the judge " + bytes_text(judge) + ", ";
    if (rounds) out += "the reference's own sandbox " + bytes_text(reference_sandbox) + ", ";
    out += "the candidate's sandbox " + bytes_text(candidate_sandbox) + ", CUDA contexts " +
           bytes_text(contexts) + "); the device has " + bytes_text(device);
    return out;
}

json MemoryPlan::to_json() const {
    return json{{"problem", problem.to_json()},
                {"device", device},
                {"rounds", rounds},
                {"rounds_dropped", rounds_dropped},
                {"judge", judge},
                {"judge_shared", judge_shared},
                {"judge_bound", judge_bound(problem)},
                {"transient", transient},
                {"outputs_on_host", outputs_on_host},
                {"inputs_on_host", inputs_on_host},
                {"reference_exports", reference_exports},
                {"reference_sandbox", reference_sandbox},
                {"candidate_sandbox", candidate_sandbox},
                {"contexts", contexts},
                {"total", total()},
                {"fits", fits()},
                {"arbiter", arbiter},
                {"arbiter_on_device", arbiter_on_device()}};
}

}  // namespace kbench
