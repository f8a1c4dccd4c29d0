#include "core/verdict.hpp"

#include "core/error.hpp"
#include "core/fields.hpp"

namespace kbench {
namespace {

template <typename T>
json optional_json(const std::optional<T>& value) {
    return value ? json(*value) : json(nullptr);
}

template <typename T>
std::optional<T> optional_from(const json& j, const char* key) {
    if (!j.contains(key) || j.at(key).is_null()) return std::nullopt;
    return j.at(key).get<T>();
}

// A stored number: non-finite values are written as text (JSON has no inf or nan).
double number_at(const json& j, const char* key) {
    if (!j.contains(key) || j.at(key).is_null()) return 0;
    return real_from_json(j.at(key), key);
}

}  // namespace

json TimingResult::to_json() const {
    return json{{"median_us", real_json(median_us)},
                {"mean_us", real_json(mean_us)},
                {"min_us", real_json(min_us)},
                {"max_us", real_json(max_us)},
                {"std_us", real_json(std_us)},
                {"p10_us", real_json(p10_us)},
                {"p90_us", real_json(p90_us)},
                {"n", n},
                {"converged", converged},
                {"statistic", statistic}};
}

TimingResult TimingResult::from_json(const json& j) {
    TimingResult t;
    t.median_us = number_at(j, "median_us");
    t.mean_us = number_at(j, "mean_us");
    t.min_us = number_at(j, "min_us");
    t.max_us = number_at(j, "max_us");
    t.std_us = number_at(j, "std_us");
    t.p10_us = number_at(j, "p10_us");
    t.p90_us = number_at(j, "p90_us");
    t.n = j.value("n", 0);
    t.converged = j.value("converged", false);
    t.statistic = j.value("statistic", std::string("median"));
    return t;
}

json Verdict::to_json() const {
    json j;
    j["problem"] = {{"level", optional_json(problem.level)},
                    {"id", optional_json(problem.id)},
                    {"name", problem.name},
                    {"sha256", problem.sha256}};
    j["candidate"] = {{"path", candidate.path},
                      {"sha256", candidate.sha256},
                      {"backend", candidate.backend},
                      {"sample_id", optional_json(candidate.sample_id)}};
    j["config"] = config;
    j["status"] = std::string(to_string(status));
    j["reason"] = reason;
    j["blame"] = std::string(to_string(blame));
    j["masked"] = blame != Blame::candidate;
    j["rule"] = rule;
    j["correctness"] = {{"trials_passed", correctness.trials_passed},
                        {"trials", correctness.trials},
                        {"max_abs_diff", real_json(correctness.max_abs_diff)},
                        {"max_rel_diff", real_json(correctness.max_rel_diff)},
                        {"arbitration", correctness.arbitration}};
    j["timing"] = timing ? timing->to_json() : json(nullptr);
    if (baseline) {
        j["baseline"] = baseline->to_json();
        j["baseline"]["kind"] = baseline_kind;
        if (!baseline_precision.is_null()) j["baseline"]["precision"] = baseline_precision;
        if (!baseline_kernels.is_null()) j["baseline"]["kernels"] = baseline_kernels;
    } else {
        j["baseline"] = nullptr;
    }
    j["speedup"] = speedup ? real_json(*speedup) : json(nullptr);
    j["speedup_ci95"] =
        speedup_ci95
            ? json::array({real_json(speedup_ci95->first), real_json(speedup_ci95->second)})
            : json(nullptr);
    if (speedup_rounds > 0) j["speedup_rounds"] = speedup_rounds;
    j["integrity"] = json::array();
    for (const auto& f : integrity) {
        json finding = {{"rule", f.rule},
                        {"severity", std::string(to_string(f.severity))},
                        {"detail", f.detail}};
        if (f.line > 0) finding["line"] = f.line;
        if (!f.evidence.empty()) finding["evidence"] = f.evidence;
        j["integrity"].push_back(std::move(finding));
    }
    j["kernels"] = json::array();
    for (const auto& k : kernels)
        j["kernels"].push_back({{"name", k.name},
                                {"origin", k.origin},
                                {"share", real_json(k.share)},
                                {"count", k.count},
                                {"total_us", real_json(k.total_us)},
                                {"streams", k.streams}});
    if (!kernel_activity.is_null()) j["kernel_activity"] = kernel_activity;
    if (!floor.is_null()) j["floor"] = floor;
    if (!problem_health.is_null()) j["problem_health"] = problem_health;
    if (!memory.is_null()) j["memory"] = memory;
    j["phases_s"] = json::object();
    for (const auto& [phase, seconds] : phases_s) j["phases_s"][phase] = real_json(seconds);
    if (!log.empty()) j["log"] = log;
    return j;
}

Verdict Verdict::from_json(const json& j) {
    Verdict v;
    const auto& p = j.at("problem");
    v.problem = {optional_from<int>(p, "level"), optional_from<int>(p, "id"),
                 p.value("name", std::string()), p.value("sha256", std::string())};
    const auto& c = j.at("candidate");
    v.candidate = {c.value("path", std::string()), c.value("sha256", std::string()),
                   c.value("backend", std::string()), optional_from<int>(c, "sample_id")};
    v.config = j.value("config", json::object());
    std::string status = j.at("status").get<std::string>();
    std::optional<Status> known = parse_status(status);
    // A status kbench does not know is a verdict it cannot read, never a harness failure.
    if (!known) throw ProtocolError("verdict: unknown status '" + status + "'");
    std::string reason = j.value("reason", std::string());
    std::optional<Blame> blame = parse_blame(j.value("blame", std::string()));
    decide(v, {*known, blame ? *blame : blame_of_stored(*known, reason),
               j.value("rule", std::string()), reason});
    const auto& r = j.at("correctness");
    v.correctness = {r.value("trials_passed", 0), r.value("trials", 0),
                     number_at(r, "max_abs_diff"), number_at(r, "max_rel_diff"),
                     r.value("arbitration", json())};
    if (j.contains("timing") && !j["timing"].is_null())
        v.timing = TimingResult::from_json(j["timing"]);
    if (j.contains("baseline") && !j["baseline"].is_null()) {
        v.baseline = TimingResult::from_json(j["baseline"]);
        v.baseline_kind = j["baseline"].value("kind", std::string("eager"));
        v.baseline_precision = j["baseline"].value("precision", json());
        v.baseline_kernels = j["baseline"].value("kernels", json());
    }
    if (j.contains("speedup") && !j["speedup"].is_null()) v.speedup = number_at(j, "speedup");
    if (j.contains("speedup_ci95") && j["speedup_ci95"].is_array() && j["speedup_ci95"].size() == 2)
        v.speedup_ci95 = {real_from_json(j["speedup_ci95"][0], "speedup_ci95"),
                          real_from_json(j["speedup_ci95"][1], "speedup_ci95")};
    v.speedup_rounds = j.value("speedup_rounds", 0);
    for (const auto& f : j.value("integrity", json::array())) {
        std::string severity = f.value("severity", std::string());
        std::optional<Severity> known_severity = parse_severity(severity);
        if (!known_severity)
            throw ProtocolError("verdict: a finding of severity '" + severity + "'");
        v.integrity.push_back({f.value("rule", std::string()), *known_severity,
                               f.value("detail", std::string()), f.value("line", 0),
                               f.value("evidence", std::string())});
    }
    for (const auto& k : j.value("kernels", json::array()))
        v.kernels.push_back({k.value("name", std::string()), k.value("origin", std::string()),
                             number_at(k, "share"), k.value("count", std::uint64_t(0)),
                             k.contains("total_us") ? number_at(k, "total_us") : 0.0,
                             k.value("streams", std::string())});
    v.kernel_activity = j.value("kernel_activity", json());
    v.floor = j.value("floor", json());
    v.problem_health = j.value("problem_health", json());
    v.memory = j.value("memory", json());
    if (j.contains("phases_s") && j["phases_s"].is_object())
        for (const auto& [phase, seconds] : j["phases_s"].items())
            v.phases_s[phase] = real_from_json(seconds, "phases_s");
    v.log = j.value("log", std::string());
    return v;
}

}  // namespace kbench
