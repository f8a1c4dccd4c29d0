#include "report/kernelbench_results.hpp"

#include <map>

namespace kbench::report {
namespace {

using json = nlohmann::ordered_json;

json runtime_stats(const TimingResult& t, const nlohmann::json& config) {
    return {{"mean", t.mean_us / 1000},
            {"median", t.median_us / 1000},
            {"min", t.min_us / 1000},
            {"p10", t.p10_us / 1000},
            {"p90", t.p90_us / 1000},
            {"num_trials", t.n},
            {"hardware", config.value("device_name", std::string())},
            {"device", config.value("device", std::string())}};
}

json entry(const Verdict& v) {
    // KernelBench counts a missing ModelNew and syntax errors as not compiled.
    bool compiled =
        v.status != Status::compile_error &&
        !(v.status == Status::load_error && v.reason.find("no ModelNew") != std::string::npos);
    json metadata = {{"hardware", v.config.value("device_name", std::string())},
                     {"device", v.config.value("device", std::string())},
                     {"status", std::string(to_string(v.status))}};
    if (v.correctness.trials > 0 && v.status != Status::compile_error &&
        v.status != Status::load_error)
        metadata["correctness_trials"] = "(" + std::to_string(v.correctness.trials_passed) + " / " +
                                         std::to_string(v.correctness.trials) + ")";
    switch (v.status) {
        case Status::compile_error:
            metadata["compilation_error"] = v.reason;
            break;
        case Status::incorrect:
            metadata["correctness_issue"] = v.reason;
            break;
        case Status::correct:
            break;
        default:
            metadata["runtime_error"] = v.reason;
            break;
    }
    json e = {{"sample_id", v.candidate.sample_id.value_or(0)},
              {"compiled", compiled},
              {"correctness", v.status == Status::correct},
              {"metadata", metadata},
              {"runtime", v.timing ? v.timing->headline_us() / 1000 : -1.0},
              {"runtime_stats", v.timing ? runtime_stats(*v.timing, v.config) : json::object()}};
    if (v.baseline) {
        e["ref_runtime"] = v.baseline->headline_us() / 1000;
        e["ref_runtime_stats"] = runtime_stats(*v.baseline, v.config);
    }
    return e;
}

}  // namespace

nlohmann::ordered_json kernelbench_eval_results(const std::vector<Verdict>& verdicts) {
    std::map<int, json> by_problem;
    for (const auto& v : verdicts) {
        json& list = by_problem[v.problem.id.value_or(0)];
        if (list.is_null()) list = json::array();
        list.push_back(entry(v));
    }
    // Ordered by number, as KernelBench writes it (a plain json object would sort "10" < "2").
    json out = json::object();
    for (auto& [id, list] : by_problem) out[std::to_string(id)] = std::move(list);
    return out;
}

}  // namespace kbench::report
