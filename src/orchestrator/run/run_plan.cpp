#include "orchestrator/run/run_plan.hpp"

namespace kbench::orchestrator {

RunPlan plan_run(const std::vector<ItemRecord>& records, bool force) {
    RunPlan plan;
    for (std::size_t i = 0; i < records.size(); ++i) {
        const ItemRecord& r = records[i];
        bool has_verdict = r.status.has_value();
        if (!force && has_verdict && *r.status != "infra_error") {
            plan.done.push_back(i);
            continue;
        }
        // A stored verdict (an infra_error) ended its attempts; force starts afresh.
        int attempts = force || has_verdict ? 0 : r.attempts;
        if (attempts <= 0) {
            plan.rest.push_back(i);
        } else if (attempts == 1) {
            plan.suspects.push_back(i);
        } else {
            plan.condemned.emplace_back(i, attempts);
        }
    }
    return plan;
}

Decision condemned(int attempts, bool by_eval) {
    return Decision::failed(Status::crash,
                            "kbench stopped " + std::to_string(attempts) +
                                " times while evaluating this candidate" +
                                (by_eval ? ", the last time with it running alone" : "") +
                                " (killed, or out of memory); it is not evaluated again" +
                                (by_eval ? " (--force does)" : ""));
}

}  // namespace kbench::orchestrator
