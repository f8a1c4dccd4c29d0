#include "cli/baseline_cache.hpp"

#include <map>

#include "core/sha256.hpp"

namespace kbench::cli {

std::string BaselineSetting::key() const {
    json j = {{"kbench baseline", 1},   {"problem", problem_sha256},
              {"precision", precision}, {"tf32", tf32},
              {"mode", mode},           {"hello", hello},
              {"timing", timing}};
    return sha256_hex(j.dump());
}

json baseline_timing(const json& timing) {
    json out = timing;
    out.erase("stop_below");
    return out;
}

fs::path baselines_dir() {
    return cache_root() / "baselines";
}

json read_baseline(const BaselineSetting& setting) {
    fs::path path = baselines_dir() / (setting.key() + ".json");
    if (!fs::exists(path)) return nullptr;
    try {
        json entry = json::parse(read_file(path));
        if (entry.is_object() && entry.value("key", std::string()) == setting.key()) return entry;
    } catch (const std::exception&) {  // a damaged entry is timed again
    }
    return nullptr;
}

void write_baseline(const BaselineSetting& setting, const json& entry) {
    fs::create_directories(baselines_dir());
    json kept = entry;
    kept["key"] = setting.key();
    kept["setting"] = {{"problem_sha256", setting.problem_sha256},
                       {"precision", setting.precision},
                       {"tf32", setting.tf32},
                       {"mode", setting.mode},
                       {"hello", setting.hello},
                       {"timing", setting.timing}};
    write_file_atomic(baselines_dir() / (setting.key() + ".json"), kept.dump(1) + "\n");
}

json kernelbench_timing_entry(const json& entry) {
    return {{"mean", entry.at("mean_ms")},
            {"std", entry.at("std_ms")},
            {"min", entry.at("min_ms")},
            {"max", entry.at("max_ms")},
            {"num_trials", entry.at("num_trials")},
            {"hardware", entry.value("hardware", std::string())},
            {"device", entry.value("device", std::string())}};
}

std::string kernelbench_timing_file(const std::string& mode) {
    if (mode == "eager") return "baseline_time_torch.json";
    return "baseline_time_torch_compile_inductor_" + mode + ".json";
}

json kept_baseline_table(const std::vector<Verdict>& verdicts, const std::string& mode,
                         int* found) {
    // What each problem was evaluated on: its hash, precision, TF32 setting, device, protocol.
    struct Wanted {
        int level = 0;
        std::string name, precision, tf32, device, protocol, statistic;
    };
    std::map<std::string, Wanted> wanted;
    for (const Verdict& v : verdicts) {
        if (!v.problem.level || v.problem.sha256.empty()) continue;
        wanted[v.problem.sha256] = {*v.problem.level,
                                    v.problem.name,
                                    v.config.value("precision", std::string()),
                                    v.config.value("tf32", std::string()),
                                    v.config.value("device_name", std::string()),
                                    v.config.value("mode", std::string()),
                                    v.timing ? v.timing->statistic : std::string("median")};
    }
    std::map<std::string, json> newest;  // problem hash -> entry
    std::error_code ec;
    if (fs::is_directory(baselines_dir(), ec))
        for (const auto& file : fs::directory_iterator(baselines_dir(), ec)) {
            if (file.path().extension() != ".json") continue;
            json e;
            try {
                e = json::parse(read_file(file.path()));
            } catch (const std::exception&) {
                continue;
            }
            if (!e.is_object() || !e.contains("setting") || !e.contains("mean_ms")) continue;
            const json& s = e["setting"];
            std::string hash = s.value("problem_sha256", std::string());
            auto it = wanted.find(hash);
            if (it == wanted.end() || s.value("mode", std::string()) != mode ||
                s.value("precision", std::string()) != it->second.precision ||
                s.value("tf32", std::string()) != it->second.tf32 ||
                e.value("hardware", std::string()) != it->second.device || !s.contains("timing") ||
                s["timing"].value("protocol", std::string()) != it->second.protocol)
                continue;
            json& best = newest[hash];
            if (best.is_null() ||
                e.value("made_at", std::string()) > best.value("made_at", std::string()))
                best = e;
        }
    json table = json::object();
    if (found) *found = 0;
    for (const auto& [hash, e] : newest) {
        const Wanted& w = wanted[hash];
        // The statistic of the verdicts' headline times (strict mode: the median), under the
        // name the score reads, so that a speedup divides like by like.
        json row = kernelbench_timing_entry(e);
        if (w.statistic == "median") row["mean"] = e.at("median_ms");
        table["level" + std::to_string(w.level)][w.name + ".py"] = row;
        if (found) ++*found;
    }
    return table;
}

}  // namespace kbench::cli
