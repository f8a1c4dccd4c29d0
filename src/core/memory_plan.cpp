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
                {"modifies_inputs", modifies_inputs}};
}

ProblemMemory ProblemMemory::from_json(const json& j) {
    Fields f(j, "problem memory");
    return {f.count("inputs"), f.count("outputs"), f.count("parameters"), f.count("call_peak"),
            f.flag("modifies_inputs")};
}

MemoryPlan plan_memory(const ProblemMemory& problem, std::uint64_t device_bytes, bool rounds) {
    MemoryPlan plan;
    plan.problem = problem;
    plan.rounds = rounds;
    plan.device = device_bytes;
    const std::uint64_t in = problem.inputs, out = problem.outputs;
    const std::uint64_t call = std::max(problem.call_peak, out);
    // Shared with the candidate's sandbox, and with rounds the reference's own.
    plan.judge_shared = (in + out) * (rounds ? 2 : 1);
    // The reference's model, one call's inputs, one reference call (on a copy of the inputs
    // where it changes them), the working allowance. Replies are kept as keyed digests, not
    // copies.
    plan.judge = plan.judge_shared + problem.parameters + in + (problem.modifies_inputs ? in : 0) +
                 call + kJudgeWorkingBytes;
    plan.reference_sandbox = rounds ? problem.parameters + call : 0;
    plan.candidate_sandbox = problem.parameters + call;
    plan.contexts = kContextBytes * (rounds ? 3 : 2);
    plan.arbiter = 2 * (problem.parameters + in + call);
    return plan;
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

std::string MemoryPlan::needs_text() const {
    std::string out =
        "needs " + bytes_text(total()) + " on the device (the judge " + bytes_text(judge) + ", ";
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
                {"reference_sandbox", reference_sandbox},
                {"candidate_sandbox", candidate_sandbox},
                {"contexts", contexts},
                {"total", total()},
                {"fits", fits()},
                {"arbiter", arbiter},
                {"arbiter_on_device", arbiter_on_device()}};
}

}  // namespace kbench
