#pragma once

#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/config.hpp"
#include "core/status.hpp"

namespace kbench::integrity {

using json = nlohmann::json;

// How hard integrity rules bite. strict (strict mode's default) rejects every hack kbench can
// name; kernelbench (kernelbench mode's default) rejects what the reference harness's own static
// checker treats as an error; permissive rejects nothing and records every finding as a warning
// (for measurements that use candidates identical to their references).
enum class Policy { strict, kernelbench, permissive };

std::string_view to_string(Policy policy);
Policy parse_policy(std::string_view text);  // throws UsageError naming the choices

// One rule of the table in analyzer/kbench_analyzer/rules.json (compiled in; the analyzer reads
// the same file): static rules read the candidate's source before it is built; runtime rules judge
// what it did.
struct Rule {
    std::string id;
    // "static", "runtime", "judge" (the judge stops the request: never allowed) or "record" (what
    // happened to the evaluation itself: neither allowed nor denied)
    std::string kind;
    Severity strict = Severity::reject;
    Severity kernelbench = Severity::reject;
    Severity permissive = Severity::reject;
    std::string finds;  // one line, for `kbench rules` and docs/rules.md
};

// The table; throws std::logic_error where the compiled-in file is malformed (a unit test reads
// it, so a build that passes its tests never does).
const std::vector<Rule>& all_rules();
const Rule* find_rule(std::string_view id);

// A policy with per-rule changes: --allow RULE never rejects it, --deny RULE always does.
struct RulePolicy {
    Policy policy = Policy::strict;
    std::set<std::string> allow;
    std::set<std::string> deny;

    // The rule's severity under the policy for a rule kbench knows; reject for one it does not
    // (a rule the analyzer reports that this table lacks is a fault to fix, never a free pass).
    Severity severity(std::string_view rule) const;
    json to_json() const;

    // Checks the rule names (a UsageError lists the known ones) and that no rule is both
    // allowed and denied.
    static RulePolicy make(std::string_view policy, const std::vector<std::string>& allow,
                           const std::vector<std::string>& deny);
    // The policy a run's configuration names.
    static RulePolicy of(const CheckConfig& config);
};

}  // namespace kbench::integrity
