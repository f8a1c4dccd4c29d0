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

bool inputs_made_on_host(const ProblemMemory& problem) {
    return problem.making > kMakingOnDevice &&
           problem.making > (problem.inputs + problem.outputs) / 4;
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
    if (plan.transient) {
        // Per request: the inputs, made in memory of their own that the sandbox maps where they
        // lie, and the outputs' buffers, gone when the request's checks are done; so at most one
        // request's, of either sandbox, at a time. The reference's call runs before the request
        // (or, for a timed call checked after it, on inputs made again from their seed), so
        // the judge holds the inputs, the reference's call and the outputs' buffers; where that
        // does not fit the device, the reference's outputs (and a checked call's outputs)
        // wait on the host instead (outputs_on_host: slower, one copy each way per check).
        plan.judge_shared = out;
        std::uint64_t base = problem.parameters + in + copy + kJudgeWorkingBytes;
        // With rounds, the reference's own sandbox makes the reference's outputs in its own
        // share (its call's memory, kept until its next request) and the judge maps them: the
        // judge holds the inputs and the candidate's outputs, not the reference's call.
        plan.reference_exports = rounds && strict && !problem.modifies_inputs;
        plan.judge = base + (plan.reference_exports ? 0 : call) + out;
        if (!plan.fits() && !plan.reference_exports) {
            plan.outputs_on_host = true;
            plan.judge = base + std::max(call, out);
        }
    } else {
        // Buffers kept from request to request: the candidate's sandbox's and with rounds the
        // reference's own; one call's inputs of the judge's own, copied in once the clock has
        // started; one reference call; replies kept as keyed digests, not copies.
        plan.judge_shared = (in + out) * (rounds ? 2 : 1);
        plan.judge = plan.judge_shared + problem.parameters + in + copy + call + kJudgeWorkingBytes;
    }
    // Making a call's inputs on the device: what the judge holds then, with the temporaries of
    // get_inputs() (none where they are made on the host).
    const std::uint64_t making = inputs_made_on_host(problem) ? 0 : problem.making;
    plan.judge =
        std::max(plan.judge, (plan.transient ? 0 : plan.judge_shared) + problem.parameters + in +
                                 copy + making + kJudgeWorkingBytes);
    plan.arbiter = 2 * (problem.parameters + in + call);
    return plan;
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
                {"judge", judge},
                {"judge_shared", judge_shared},
                {"judge_bound", judge_bound(problem)},
                {"transient", transient},
                {"outputs_on_host", outputs_on_host},
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
