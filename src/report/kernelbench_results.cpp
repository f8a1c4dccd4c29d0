#include "report/kernelbench_results.hpp"

#include <map>
#include <regex>
#include <sstream>

#include "core/fields.hpp"
#include "core/files.hpp"
#include "score/kernelbench_view.hpp"

namespace kbench::report {
namespace {

using json = nlohmann::ordered_json;

json runtime_stats(const TimingResult& t, const nlohmann::json& config) {
    return {{"mean", t.mean_us / 1000},
            {"std", t.std_us / 1000},
            {"min", t.min_us / 1000},
            {"max", t.max_us / 1000},
            {"num_trials", t.n},
            {"hardware", config.value("device_name", std::string())},
            {"device", config.value("device", std::string())},
            {"median", t.median_us / 1000},
            {"p10", t.p10_us / 1000},
            {"p90", t.p90_us / 1000},
            {"converged", t.converged},
            {"statistic", t.statistic}};
}

std::string error_name(const Verdict& v, const std::string& fallback) {
    std::string name = python_error_name(v.log);
    if (name.empty()) name = python_error_name(v.reason);
    return name.empty() ? fallback : name;
}

json entry(const Verdict& v) {
    json metadata = {{"hardware", v.config.value("device_name", std::string())},
                     {"device", v.config.value("device", std::string())},
                     {"status", std::string(to_string(v.status))}};
    bool built = score::kernelbench_compiled(v);
    if (v.correctness.trials > 0 && built && v.status != Status::load_error &&
        (v.status == Status::correct || v.status == Status::incorrect))
        metadata["correctness_trials"] = "(" + std::to_string(v.correctness.trials_passed) + " / " +
                                         std::to_string(v.correctness.trials) + ")";
    if (!built) {
        metadata["compilation_error"] = v.reason;
        metadata["compilation_error_name"] = v.status == Status::rejected
                                                 ? "kbench.rejected"
                                                 : error_name(v, "builtins.RuntimeError");
    } else if (v.status == Status::incorrect) {
        metadata["correctness_issue"] = v.reason;
        metadata["correctness_issue_name"] = "correctness_issue";
        char text[32];
        std::snprintf(text, sizeof text, "%.6f", v.correctness.max_abs_diff);
        metadata["max_difference"] = json::array({std::string(text)});
    } else if (v.status != Status::correct) {
        metadata["runtime_error"] = v.reason;
        metadata["runtime_error_name"] =
            error_name(v, "kbench." + std::string(to_string(v.status)));
    }
    json e = {{"sample_id", v.candidate.sample_id.value_or(0)},
              {"compiled", built},
              {"correctness", v.status == Status::correct},
              {"metadata", metadata},
              {"runtime", v.timing ? v.timing->mean_us / 1000 : -1.0},
              {"runtime_stats", v.timing ? runtime_stats(*v.timing, v.config) : json::object()}};
    if (v.baseline) {
        e["ref_runtime"] = v.baseline->mean_us / 1000;
        e["ref_runtime_stats"] = runtime_stats(*v.baseline, v.config);
    }
    return e;
}

}  // namespace

std::string python_error_name(const std::string& text) {
    if (text.find("Traceback (most recent call last)") == std::string::npos) return {};
    // The exception line: the last line that starts at column 0 with a dotted name and ':'.
    static const std::regex line(
        R"(^([A-Za-z_][A-Za-z0-9_.]*(Error|Exception|Interrupt|Exit|Warning|[A-Z][a-z]+))(:.*)?$)");
    std::stringstream in(text);
    std::string name;
    for (std::string l; std::getline(in, l);) {
        std::smatch m;
        if (!l.empty() && l[0] != ' ' && std::regex_match(l, m, line) &&
            l.rfind("Traceback", 0) != 0)
            name = m[1];
    }
    if (name.empty()) return {};
    return name.find('.') == std::string::npos ? "builtins." + name : name;
}

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

std::multimap<int, std::string> write_kernelbench_results(const std::string& run_dir,
                                                          const std::vector<Verdict>& verdicts) {
    std::map<int, std::vector<Verdict>> by_level;
    for (const auto& v : verdicts) by_level[v.problem.level.value_or(0)].push_back(v);
    std::multimap<int, std::string> written;
    for (const auto& [level, list] : by_level) {
        std::string text = dump_text(kernelbench_eval_results(list), 4) + "\n";
        fs::path dir = fs::path(run_dir) / ("level" + std::to_string(level));
        fs::create_directories(dir);
        write_file_atomic(dir / "eval_results.json", text);
        written.emplace(level, (dir / "eval_results.json").string());
        if (by_level.size() == 1) {
            write_file_atomic(fs::path(run_dir) / "eval_results.json", text);
            written.emplace(0, (fs::path(run_dir) / "eval_results.json").string());
        }
    }
    return written;
}

}  // namespace kbench::report
