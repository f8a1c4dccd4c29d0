#include "score/kernelbench_view.hpp"

#include <cmath>
#include <cstdio>
#include <set>

namespace kbench::score {
namespace {

std::optional<double> baseline_ms(const nlohmann::json& baseline, int level,
                                  const std::string& name, const Verdict* v) {
    if (baseline.is_null()) {
        // Every problem has a baseline (as in KernelBench's files); only timed ones are known.
        if (v && v->baseline) return v->baseline->mean_us / 1000;
        return 0.0;
    }
    return baseline_file_ms(baseline, level, name);
}

}  // namespace

std::optional<double> baseline_file_ms(const nlohmann::json& file, int level,
                                       const std::string& name) {
    std::string key = "level" + std::to_string(level);
    if (!file.is_object() || !file.contains(key)) return std::nullopt;
    const auto& table = file[key];
    for (const std::string& entry : {name + ".py", name})
        if (table.contains(entry) && table[entry].contains("mean") &&
            table[entry]["mean"].is_number())
            return table[entry]["mean"].get<double>();
    return std::nullopt;
}

bool kernelbench_compiled(const Verdict& v) {
    if (v.status == Status::compile_error) return false;
    if (v.status == Status::load_error && v.reason.rfind("load (import)", 0) == 0) return false;
    if (v.status == Status::rejected && !v.phases_s.count("build")) return false;
    return true;
}

std::vector<KernelBenchView> kernelbench_view(const std::vector<Verdict>& verdicts,
                                              const std::vector<ProblemEntry>& problems,
                                              const nlohmann::json& baseline,
                                              const std::vector<double>& thresholds) {
    std::map<int, KernelBenchView> views;
    std::map<std::pair<int, int>, const Verdict*> sample0;
    std::set<std::pair<int, int>> evaluated;
    for (const auto& v : verdicts) {
        std::pair<int, int> at{v.problem.level.value_or(0), v.problem.id.value_or(0)};
        evaluated.insert(at);
        if (v.candidate.sample_id.value_or(0) == 0) sample0[at] = &v;
    }
    std::map<int, std::vector<double>> speedups;  // of correct, aligned problems
    for (const auto& p : problems) {
        KernelBenchView& view = views[p.level];
        view.level = p.level;
        view.baseline = baseline.is_null() ? "each verdict's own baseline (mean)" : "a file";
        ++view.total;
        std::pair<int, int> at{p.level, p.id};
        if (evaluated.count(at)) ++view.evaluated;
        auto it = sample0.find(at);
        const Verdict* v = it == sample0.end() ? nullptr : it->second;
        bool correct = v && v->status == Status::correct;
        if (v && kernelbench_compiled(*v)) ++view.compiled;
        if (correct) ++view.correct;
        auto base = baseline_ms(baseline, p.level, p.name, v);
        if (!base) continue;
        ++view.aligned;
        if (correct && *base > 0 && v->timing && v->timing->mean_us > 0)
            speedups[p.level].push_back(*base / (v->timing->mean_us / 1000));
        else if (correct)
            speedups[p.level].push_back(0);  // correct, never timed: counts at no p above 0
    }
    std::vector<KernelBenchView> out;
    for (auto& [level, view] : views) {
        const auto& s = speedups[level];
        double log_sum = 0;
        std::size_t n = 0;
        for (double x : s)
            if (x > 0) {
                log_sum += std::log(x);
                ++n;
            }
        view.geomean_speedup = n ? std::exp(log_sum / double(n)) : 0;
        for (double p : thresholds) {
            std::size_t hits = 0;
            for (double x : s)
                if (x > p) ++hits;
            view.fast_p[p] = view.aligned ? double(hits) / double(view.aligned) : 0;
        }
        out.push_back(view);
    }
    return out;
}

std::string format_kernelbench_view(const KernelBenchView& v) {
    char line[256];
    std::snprintf(line, sizeof line,
                  "  level %d: %zu/%zu problems evaluated, compiled %zu, correct %zu; "
                  "%zu with a baseline; geomean speedup %.3fx;",
                  v.level, v.evaluated, v.total, v.compiled, v.correct, v.aligned,
                  v.geomean_speedup);
    std::string out = line;
    for (const auto& [p, share] : v.fast_p) {
        std::snprintf(line, sizeof line, " fast_%g %.1f%%", p, 100 * share);
        out += line;
    }
    return out + "\n";
}

}  // namespace kbench::score
