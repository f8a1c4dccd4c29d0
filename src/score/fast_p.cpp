#include "score/fast_p.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

namespace kbench::score {

Score score_verdicts(const std::vector<Verdict>& verdicts, const std::vector<double>& thresholds,
                     bool exclude_flagged, std::size_t without_candidate) {
    Score score;
    score.without_candidate = without_candidate;
    score.timed =
        verdicts.empty() || std::any_of(verdicts.begin(), verdicts.end(), [](const Verdict& v) {
            return !v.config.is_object() || v.config.value("measure", true) || v.timing.has_value();
        });
    score.flagged_left_out = exclude_flagged;
    std::set<std::string> flagged;
    for (const auto& v : verdicts)
        if (v.problem_health.is_object() && !v.problem_health.value("flags", json::array()).empty())
            flagged.insert(v.problem.sha256 + "/" + v.problem.name);
    score.flagged_problems = flagged.size();
    // Per problem: whether any candidate is correct, and the best speedup among correct ones.
    struct Best {
        bool correct = false;
        double speedup = -1;
    };
    std::map<std::string, Best> best;
    for (const auto& v : verdicts) {
        ++score.candidates;
        ++score.by_status[std::string(to_string(v.status))];
        std::string key = v.problem.sha256 + "/" + v.problem.name;
        if (exclude_flagged && flagged.count(key)) continue;
        Best& b = best[key];
        if (v.status != Status::correct) continue;
        b.correct = true;
        if (v.speedup) b.speedup = std::max(b.speedup, *v.speedup);
    }
    score.problems = best.size() + without_candidate;
    double log_sum = 0;
    for (const auto& [key, b] : best)
        if (b.correct && b.speedup > 0) {
            log_sum += std::log(b.speedup);
            ++score.timed_problems;
        }
    if (score.timed_problems > 0)
        score.geomean_speedup = std::exp(log_sum / double(score.timed_problems));
    for (double p : thresholds) {
        std::size_t hits = 0;
        for (const auto& [key, b] : best)
            if (b.correct && (p <= 0 || b.speedup >= p)) ++hits;
        score.fast_p[p] = score.problems ? double(hits) / double(score.problems) : 0;
    }
    return score;
}

bool better_verdict(const Verdict& a, const Verdict& b) {
    bool ca = a.status == Status::correct, cb = b.status == Status::correct;
    if (ca != cb) return ca;
    if (ca) return a.speedup.value_or(0) > b.speedup.value_or(0);
    auto rank = [](Status s) {
        switch (s) {
            case Status::incorrect:
                return 0;
            case Status::runtime_error:
            case Status::timeout:
                return 1;
            case Status::rejected:
                return 2;
            case Status::load_error:
            case Status::crash:
                return 3;
            case Status::compile_error:
                return 4;
            default:
                return 5;
        }
    };
    return rank(a.status) < rank(b.status);
}

std::string format_score(const Score& s) {
    std::string out;
    char line[160];
    std::snprintf(line, sizeof(line), "%zu problems, %zu candidates\n", s.problems, s.candidates);
    out += line;
    if (s.without_candidate > 0) {
        std::snprintf(line, sizeof(line),
                      "  %zu problem(s) with no usable candidate count as failures\n",
                      s.without_candidate);
        out += line;
    }
    for (const auto& [p, share] : s.fast_p) {
        if (p > 0 && !s.timed)
            std::snprintf(line, sizeof(line), "  fast_%-4g    n/a (not timed: --no-timing)\n", p);
        else
            std::snprintf(line, sizeof(line), "  fast_%-4g %6.1f%%\n", p, 100 * share);
        out += line;
    }
    if (s.timed_problems > 0) {
        std::snprintf(line, sizeof(line), "  geomean speedup %.3fx over %zu correct problems\n",
                      s.geomean_speedup, s.timed_problems);
        out += line;
    }
    if (s.flagged_problems > 0) {
        std::snprintf(line, sizeof(line),
                      s.flagged_left_out
                          ? "  %zu problem(s) flagged by the audit left out of the shares\n"
                          : "  %zu problem(s) flagged by the audit are in the shares "
                            "(--exclude-flagged leaves them out)\n",
                      s.flagged_problems);
        out += line;
    }
    out += "  verdicts:";
    for (const auto& [status, count] : s.by_status)
        out += " " + status + " " + std::to_string(count) + ",";
    if (out.back() == ',') out.pop_back();
    return out + "\n";
}

}  // namespace kbench::score
