#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "core/decision.hpp"

namespace kbench::orchestrator {

// What the store holds for one item of a run: its stored verdict's status (none: no verdict),
// and how many evaluations of it began without a verdict (kbench ended abnormally meanwhile:
// killed, out of memory; an interruption by a signal takes its attempt back).
struct ItemRecord {
    std::optional<std::string> status;
    int attempts = 0;
};

// How a run resumes, by item index.
struct RunPlan {
    std::vector<std::size_t> done;      // a verdict is stored: reported, not evaluated
    std::vector<std::size_t> suspects;  // one abnormal end during it: evaluated alone, first
    std::vector<std::size_t> rest;      // evaluated together
    // Two abnormal ends or more, the last with it alone: a crash verdict, not a third try.
    std::vector<std::pair<std::size_t, int>> condemned;  // with their attempts

    std::size_t to_do() const { return suspects.size() + rest.size() + condemned.size(); }
};

// The rules: infra_error verdicts (kbench's own failures) are always evaluated again; force
// evaluates everything again and forgets attempts.
RunPlan plan_run(const std::vector<ItemRecord>& records, bool force);

// A condemned item's crash verdict. by_eval: in `kbench eval`, which runs a suspect alone and
// evaluates it again with --force.
Decision condemned(int attempts, bool by_eval);

}  // namespace kbench::orchestrator
