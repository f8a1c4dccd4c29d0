#include "integrity/rules.hpp"

#include <stdexcept>

#include "core/embedded_text.hpp"
#include "core/error.hpp"

namespace kbench::integrity {

std::string_view to_string(Policy policy) {
    switch (policy) {
        case Policy::strict:
            return "strict";
        case Policy::kernelbench:
            return "kernelbench";
        case Policy::permissive:
            return "permissive";
    }
    return "?";
}

Policy parse_policy(std::string_view text) {
    if (text == "strict") return Policy::strict;
    if (text == "kernelbench") return Policy::kernelbench;
    if (text == "permissive") return Policy::permissive;
    throw UsageError("unknown policy '" + std::string(text) + "'",
                     "use --policy strict, kernelbench or permissive");
}

namespace embedded {
// analyzer/kbench_analyzer/rules.json, compiled in (cmake/embed_text.cmake).
extern const EmbeddedText kRuleTable[];
}  // namespace embedded

namespace {

std::vector<Rule> parse_rule_table(const char* text) {
    auto fail = [](const std::string& what) {
        throw std::logic_error("the rule table (rules.json): " + what);
    };
    json table = json::parse(text, nullptr, false);
    if (!table.is_object() || !table.contains("rules") || !table["rules"].is_array())
        fail("not an object with a rules list");
    std::vector<Rule> rules;
    std::set<std::string> ids;
    for (const json& r : table["rules"]) {
        auto field = [&](const char* name) {
            if (!r.contains(name) || !r[name].is_string() || r[name].get<std::string>().empty())
                fail("a rule without " + std::string(name) + ": " + r.dump());
            return r[name].get<std::string>();
        };
        auto severity = [&](const char* name) {
            std::string text = field(name);
            std::optional<Severity> s = parse_severity(text);
            if (!s) fail("a rule with severity " + text + " (warn or reject): " + r.dump());
            return *s;
        };
        Rule rule{field("id"),
                  field("kind"),
                  severity("strict"),
                  severity("kernelbench"),
                  severity("permissive"),
                  field("finds")};
        if (!ids.insert(rule.id).second) fail("rule " + rule.id + " twice");
        if (rule.kind != "static" && rule.kind != "runtime" && rule.kind != "judge" &&
            rule.kind != "record")
            fail("rule " + rule.id + " of unknown kind " + rule.kind);
        rules.push_back(std::move(rule));
    }
    return rules;
}

}  // namespace

const std::vector<Rule>& all_rules() {
    static const std::vector<Rule> rules = parse_rule_table(embedded::kRuleTable[0].text);
    return rules;
}

const Rule* find_rule(std::string_view id) {
    for (const Rule& r : all_rules())
        if (r.id == id) return &r;
    return nullptr;
}

Severity RulePolicy::severity(std::string_view rule) const {
    std::string id(rule);
    if (deny.count(id)) return Severity::reject;
    if (allow.count(id)) return Severity::warn;
    const Rule* r = find_rule(rule);
    if (!r) return Severity::reject;
    switch (policy) {
        case Policy::strict:
            return r->strict;
        case Policy::kernelbench:
            return r->kernelbench;
        case Policy::permissive:
            return r->permissive;
    }
    return Severity::reject;
}

json RulePolicy::to_json() const {
    return {{"name", std::string(to_string(policy))},
            {"allow", json(std::vector<std::string>(allow.begin(), allow.end()))},
            {"deny", json(std::vector<std::string>(deny.begin(), deny.end()))}};
}

RulePolicy RulePolicy::make(std::string_view policy, const std::vector<std::string>& allow,
                            const std::vector<std::string>& deny) {
    RulePolicy p;
    p.policy = parse_policy(policy);
    // A rule --allow or --deny may change: one the table has, no record of what happened to the
    // evaluation itself, and for --allow no breach the judge stops the request on.
    auto check = [](const std::string& id, std::string_view option) {
        const Rule* rule = find_rule(id);
        if (!rule) {
            std::string ids;
            for (const Rule& r : all_rules()) ids += (ids.empty() ? "" : ", ") + std::string(r.id);
            throw UsageError(std::string(option) + " names an unknown rule '" + id + "'",
                             "known rules: " + ids + " (kbench rules lists them)");
        }
        if (rule->kind == "record")
            throw UsageError(std::string(option) + " " + id +
                                 ": it records what happened to kbench's own evaluation, not a "
                                 "rule the candidate breaks",
                             "kbench rules lists the rules --allow and --deny change");
        if (rule->kind == "judge" && option == "--allow")
            throw UsageError("--allow " + id +
                                 ": the judge stops the request on it (a breach of "
                                 "kbench's protocol or an attack on kbench), under every policy",
                             "kbench rules lists the rules --allow can lift");
    };
    for (const auto& id : allow) {
        check(id, "--allow");
        p.allow.insert(id);
    }
    for (const auto& id : deny) {
        check(id, "--deny");
        if (p.allow.count(id))
            throw UsageError("rule '" + id + "' is both allowed and denied",
                             "give it to --allow or to --deny, not both");
        p.deny.insert(id);
    }
    return p;
}

RulePolicy RulePolicy::of(const CheckConfig& config) {
    return make(config.policy, {config.allow.begin(), config.allow.end()},
                {config.deny.begin(), config.deny.end()});
}

}  // namespace kbench::integrity
