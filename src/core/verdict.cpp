#include "core/verdict.hpp"

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

}  // namespace

json TimingResult::to_json() const {
    return json{{"median_us", median_us}, {"mean_us", mean_us},    {"min_us", min_us},
                {"p10_us", p10_us},       {"p90_us", p90_us},      {"n", n},
                {"converged", converged}, {"statistic", statistic}};
}

TimingResult TimingResult::from_json(const json& j) {
    TimingResult t;
    t.median_us = j.value("median_us", 0.0);
    t.mean_us = j.value("mean_us", 0.0);
    t.min_us = j.value("min_us", 0.0);
    t.p10_us = j.value("p10_us", 0.0);
    t.p90_us = j.value("p90_us", 0.0);
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
    j["correctness"] = {{"trials_passed", correctness.trials_passed},
                        {"trials", correctness.trials},
                        {"max_abs_diff", correctness.max_abs_diff},
                        {"max_rel_diff", correctness.max_rel_diff}};
    j["timing"] = timing ? timing->to_json() : json(nullptr);
    if (baseline) {
        j["baseline"] = baseline->to_json();
        j["baseline"]["kind"] = baseline_kind;
    } else {
        j["baseline"] = nullptr;
    }
    j["speedup"] = optional_json(speedup);
    j["speedup_ci95"] =
        speedup_ci95 ? json::array({speedup_ci95->first, speedup_ci95->second}) : json(nullptr);
    j["integrity"] = json::array();
    for (const auto& f : integrity)
        j["integrity"].push_back(
            {{"rule", f.rule}, {"severity", f.severity}, {"detail", f.detail}});
    j["kernels"] = json::array();
    for (const auto& k : kernels)
        j["kernels"].push_back({{"name", k.name}, {"origin", k.origin}, {"share", k.share}});
    j["phases_s"] = phases_s;
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
    v.status = parse_status(j.at("status").get<std::string>()).value_or(Status::infra_error);
    v.reason = j.value("reason", std::string());
    const auto& r = j.at("correctness");
    v.correctness = {r.value("trials_passed", 0), r.value("trials", 0),
                     r.value("max_abs_diff", 0.0), r.value("max_rel_diff", 0.0)};
    if (j.contains("timing") && !j["timing"].is_null())
        v.timing = TimingResult::from_json(j["timing"]);
    if (j.contains("baseline") && !j["baseline"].is_null()) {
        v.baseline = TimingResult::from_json(j["baseline"]);
        v.baseline_kind = j["baseline"].value("kind", std::string("eager"));
    }
    v.speedup = optional_from<double>(j, "speedup");
    if (j.contains("speedup_ci95") && j["speedup_ci95"].is_array())
        v.speedup_ci95 = {j["speedup_ci95"][0].get<double>(), j["speedup_ci95"][1].get<double>()};
    for (const auto& f : j.value("integrity", json::array()))
        v.integrity.push_back({f.value("rule", std::string()), f.value("severity", std::string()),
                               f.value("detail", std::string())});
    for (const auto& k : j.value("kernels", json::array()))
        v.kernels.push_back({k.value("name", std::string()), k.value("origin", std::string()),
                             k.value("share", 0.0)});
    v.phases_s = j.value("phases_s", std::map<std::string, double>{});
    v.log = j.value("log", std::string());
    return v;
}

}  // namespace kbench
