#include "score/run_score.hpp"

#include <algorithm>
#include <cmath>
#include <random>

#include "score/kernelbench_view.hpp"

namespace kbench::score {
namespace {

// What the statistics of one (re)sample of problems are.
struct Stats {
    double correct_rate = NAN;
    std::map<double, double> fast_p;
    double geomean = NAN;
};

Stats stats_of(const std::vector<const ProblemOutcome*>& sample,
               const std::vector<double>& thresholds) {
    Stats s;
    std::size_t candidates = 0, correct = 0, timed = 0;
    double log_sum = 0;
    std::map<double, std::size_t> hits;
    for (const ProblemOutcome* p : sample) {
        candidates += p->candidates;
        correct += p->correct_candidates;
        bool fast_possible = p->correct && p->has_baseline && p->best_speedup;
        for (double t : thresholds)
            if (t <= 0 ? p->correct : fast_possible && *p->best_speedup >= t) ++hits[t];
        if (fast_possible && *p->best_speedup > 0) {
            log_sum += std::log(*p->best_speedup);
            ++timed;
        }
    }
    if (candidates > 0) s.correct_rate = double(correct) / double(candidates);
    for (double t : thresholds)
        s.fast_p[t] = sample.empty() ? NAN : double(hits[t]) / double(sample.size());
    if (timed > 0) s.geomean = std::exp(log_sum / double(timed));
    return s;
}

// The 2.5th and 97.5th percentiles (linear between order statistics) of the defined values.
std::pair<double, double> percentiles(std::vector<double> values) {
    values.erase(std::remove_if(values.begin(), values.end(), [](double v) { return v != v; }),
                 values.end());
    if (values.empty()) return {NAN, NAN};
    std::sort(values.begin(), values.end());
    auto at = [&](double q) {
        double pos = q * double(values.size() - 1);
        std::size_t i = std::size_t(pos);
        double frac = pos - double(i);
        return i + 1 < values.size() ? values[i] * (1 - frac) + values[i + 1] * frac : values[i];
    };
    return {at(0.025), at(0.975)};
}

Interval interval(double point, const std::vector<double>& replicates) {
    Interval out;
    out.defined = point == point;
    if (!out.defined) return out;
    out.value = point;
    auto [lo, hi] = percentiles(replicates);
    out.lo = lo == lo ? lo : point;
    out.hi = hi == hi ? hi : point;
    return out;
}

LevelScore score_one(const std::string& name, const std::vector<const ProblemOutcome*>& problems,
                     const std::vector<double>& thresholds, const BootstrapOptions& options,
                     std::size_t flagged_left_out, std::uint64_t stream) {
    LevelScore score;
    score.level = name;
    score.problems = problems.size();
    score.flagged_left_out = flagged_left_out;
    for (const ProblemOutcome* p : problems) {
        score.candidates += p->candidates;
        score.correct_candidates += p->correct_candidates;
        if (p->correct && p->best_speedup && p->has_baseline && *p->best_speedup > 0)
            ++score.geomean_problems;
        if (!p->has_baseline) score.without_baseline.push_back(p->name);
    }
    Stats point = stats_of(problems, thresholds);
    // mt19937_64's output is fixed by the standard; the index is taken from it directly (no
    // library distribution, whose algorithm is the library's own), so intervals are the same
    // on every machine.
    std::mt19937_64 rng(options.seed + 0x9E3779B97F4A7C15ull * stream);
    std::vector<double> rates, means;
    std::map<double, std::vector<double>> shares;
    std::vector<const ProblemOutcome*> sample(problems.size());
    for (int r = 0; r < options.replicates && !problems.empty(); ++r) {
        for (auto& s : sample) s = problems[std::size_t(rng() % problems.size())];
        Stats b = stats_of(sample, thresholds);
        rates.push_back(b.correct_rate);
        means.push_back(b.geomean);
        for (double t : thresholds) shares[t].push_back(b.fast_p[t]);
    }
    score.correct_rate = interval(point.correct_rate, rates);
    for (double t : thresholds) score.fast_p[t] = interval(point.fast_p[t], shares[t]);
    score.geomean = interval(point.geomean, means);
    return score;
}

}  // namespace

std::vector<LevelScore> score_levels(const std::vector<ProblemOutcome>& problems,
                                     const std::vector<double>& thresholds,
                                     const BootstrapOptions& options, bool exclude_flagged) {
    std::map<int, std::vector<const ProblemOutcome*>> by_level;
    std::map<int, std::size_t> flagged;
    std::vector<const ProblemOutcome*> all;
    std::size_t all_flagged = 0;
    for (const auto& p : problems) {
        if (exclude_flagged && p.flagged) {
            ++flagged[p.level];
            ++all_flagged;
            continue;
        }
        by_level[p.level].push_back(&p);
        all.push_back(&p);
    }
    for (const auto& [level, n] : flagged) by_level[level];  // a level of flagged problems only
    std::vector<LevelScore> out;
    for (const auto& [level, list] : by_level)
        out.push_back(score_one(std::to_string(level), list, thresholds, options, flagged[level],
                                std::uint64_t(level)));
    if (by_level.size() > 1)
        out.push_back(score_one("all", all, thresholds, options, all_flagged, 0));
    return out;
}

std::vector<ProblemOutcome> problem_outcomes(
    const std::vector<Verdict>& verdicts,
    const std::vector<std::tuple<int, int, std::string>>& problems,
    const nlohmann::json& baseline) {
    std::map<std::pair<int, int>, ProblemOutcome> by_problem;
    std::vector<std::pair<int, int>> order;
    auto entry = [&](int level, int id, const std::string& name) -> ProblemOutcome& {
        auto [it, added] = by_problem.try_emplace({level, id});
        if (added) {
            it->second.level = level;
            it->second.id = id;
            it->second.name = name;
            order.push_back({level, id});
        }
        return it->second;
    };
    for (const auto& [level, id, name] : problems) entry(level, id, name);
    for (const Verdict& v : verdicts) {
        ProblemOutcome& p =
            entry(v.problem.level.value_or(0), v.problem.id.value_or(0), v.problem.name);
        ++p.candidates;
        if (v.problem_health.is_object() && !v.problem_health.value("flags", json::array()).empty())
            p.flagged = true;
        if (v.status != Status::correct) continue;
        ++p.correct_candidates;
        p.correct = true;
        std::optional<double> speedup;
        if (baseline.is_null()) {
            speedup = v.speedup;
        } else if (v.timing && v.timing->headline_us() > 0) {
            if (auto ms = baseline_file_ms(baseline, p.level, p.name))
                speedup = *ms * 1000 / v.timing->headline_us();
        }
        if (speedup && (!p.best_speedup || *speedup > *p.best_speedup)) p.best_speedup = speedup;
    }
    // Whether the baseline knows each problem (a file may lack some).
    if (!baseline.is_null())
        for (auto& [at, p] : by_problem)
            p.has_baseline = baseline_file_ms(baseline, p.level, p.name).has_value();
    std::vector<ProblemOutcome> out;
    for (const auto& at : order) out.push_back(by_problem[at]);
    return out;
}

}  // namespace kbench::score
