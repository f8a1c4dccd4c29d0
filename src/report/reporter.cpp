#include "report/reporter.hpp"

#include <fmt/format.h>

#include <string.h>

#include <filesystem>
#include <map>
#include <sstream>

#include "core/files.hpp"
#include "report/kernelbench_results.hpp"
#include "score/fast_p.hpp"

namespace kbench::report {
namespace {

std::string micros(double us) {
    if (us >= 1e6) return fmt::format("{:.3f} s", us / 1e6);
    if (us >= 1e3) return fmt::format("{:.3f} ms", us / 1e3);
    return fmt::format("{:.2f} us", us);
}

std::string timing_line(const TimingResult& t) {
    return fmt::format("{} {}  (median {}, mean {}, min {}, p10 {}, p90 {}, n={}, {})",
                       micros(t.headline_us()), t.statistic, micros(t.median_us), micros(t.mean_us),
                       micros(t.min_us), micros(t.p10_us), micros(t.p90_us), t.n,
                       t.converged ? "converged" : "not converged");
}

// The last lines of a log, indented, for failures.
std::string log_tail(const std::string& log, std::size_t lines) {
    std::vector<std::string> all;
    std::stringstream in(log);
    for (std::string line; std::getline(in, line);)
        if (!line.empty()) all.push_back(line);
    std::string out;
    std::size_t start = all.size() > lines ? all.size() - lines : 0;
    for (std::size_t i = start; i < all.size(); ++i) out += "    | " + all[i] + "\n";
    return out;
}

}  // namespace

std::string format_verdict(const Verdict& v) {
    std::string out;
    auto row = [&](const char* label, const std::string& text) {
        out += fmt::format("  {:<12} {}\n", label, text);
    };
    out += fmt::format("{}  <-  {}\n", v.problem.name,
                       std::filesystem::path(v.candidate.path).filename().string());
    std::string status(to_string(v.status));
    if (v.status == Status::correct || v.status == Status::incorrect)
        status += fmt::format(" ({}/{} trials)", v.correctness.trials_passed, v.correctness.trials);
    row("status", status);
    if (!v.reason.empty()) row("reason", v.reason);
    if (v.correctness.trials_passed > 0 || v.status == Status::incorrect)
        row("difference", fmt::format("max abs {:.3g}, max rel {:.3g}", v.correctness.max_abs_diff,
                                      v.correctness.max_rel_diff));
    if (v.timing) row("candidate", timing_line(*v.timing));
    if (v.baseline) row("baseline", timing_line(*v.baseline) + "  " + v.baseline_kind);
    if (v.speedup) {
        std::string ci = v.speedup_ci95 ? fmt::format("  [{:.3f}, {:.3f}] 95% CI",
                                                      v.speedup_ci95->first, v.speedup_ci95->second)
                                        : "";
        if (v.speedup_ci95 && v.speedup_rounds > 0)
            ci += fmt::format(" over {} rounds", v.speedup_rounds);
        row("speedup", fmt::format("{:.3f}x{}", *v.speedup, ci));
    }
    if (v.floor.is_object() && v.floor.value("known", false) && v.floor.contains("speed_of_light"))
        row("floor",
            fmt::format("{:.2f} us ({}-bound on {}): {:.1f}% of the speed of light",
                        v.floor.value("floor_us", 0.0), v.floor.value("bound", std::string("?")),
                        v.floor.value("gpu", std::string("?")),
                        100 * v.floor.value("speed_of_light", 0.0)));
    if (v.kernel_activity.is_object()) {
        if (!v.kernel_activity.value("collected", false))
            row("kernels", "not recorded: " + v.kernel_activity.value("why", std::string("?")));
        else
            row("kernels",
                fmt::format("{} kernel(s) in {} model call(s); the candidate's own: {:.1f}% of "
                            "{:.1f} us",
                            v.kernel_activity.value("kernels", 0),
                            v.kernel_activity.value("calls", 0),
                            100 * v.kernel_activity.value("candidate_share", 0.0),
                            v.kernel_activity.value("kernel_us", 0.0)));
        for (std::size_t i = 0; i < v.kernels.size() && i < 5; ++i)
            row("", fmt::format("{:>5.1f}%  {:<9} {}", 100 * v.kernels[i].share,
                                v.kernels[i].origin, v.kernels[i].name));
    }
    if (v.problem_health.is_object()) {
        std::string flags;
        for (const auto& f : v.problem_health.value("flags", json::array()))
            if (f.is_string()) flags += (flags.empty() ? "" : ", ") + f.get<std::string>();
        if (!flags.empty())
            row("problem", "flagged by the audit: " + flags + " (" +
                               v.problem_health.value("detail", std::string()) + ")");
    }
    for (const auto& f : v.integrity)
        row("integrity", std::string(to_string(f.severity)) + " " + f.rule + ": " + f.detail);
    std::string phases;
    for (const auto& [name, seconds] : v.phases_s)
        phases += fmt::format("{}{} {:.2f} s", phases.empty() ? "" : ", ", name, seconds);
    if (!phases.empty()) row("phases", phases);
    row("config", fmt::format("{} {} on {} ({})", v.config.value("mode", std::string("?")),
                              v.config.value("precision", std::string("?")),
                              v.config.value("device_name", std::string("?")),
                              v.config.value("device", std::string("?"))));
    if (v.status != Status::correct && !v.log.empty()) out += "  output:\n" + log_tail(v.log, 12);
    return out;
}

void TextReporter::verdict(const Verdict& verdict) {
    out_ << format_verdict(verdict) << std::flush;
}

void JsonLinesReporter::verdict(const Verdict& verdict) {
    out_ << verdict.to_json().dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n"
         << std::flush;
}

void Multiplexer::verdict(const Verdict& verdict) {
    for (auto& r : reporters_) r->verdict(verdict);
}

void Multiplexer::stored(const Verdict& verdict) {
    for (auto& r : reporters_) r->stored(verdict);
}

void Multiplexer::finish(RunOutcome& outcome) {
    for (auto& r : reporters_) r->finish(outcome);
}

std::string describe_item(const Verdict& v) {
    std::string out;
    if (v.problem.level && v.problem.id)
        out = fmt::format("level {} problem {} ({})", *v.problem.level, *v.problem.id,
                          v.problem.name);
    else
        out = v.problem.name;
    std::string file = std::filesystem::path(v.candidate.path).filename().string();
    if (v.candidate.sample_id)
        return out + fmt::format(", sample {} ({})", *v.candidate.sample_id, file);
    return out + ", " + file;
}

std::string verdict_brief(const Verdict& v) {
    std::string status(to_string(v.status));
    if (v.status == Status::correct) {
        if (v.speedup) return fmt::format("correct, {:.2f}x", *v.speedup);
        return "correct";
    }
    if (v.reason.empty()) return status;
    std::string reason = v.reason.substr(0, v.reason.find('\n'));
    if (reason.size() > 160) reason = reason.substr(0, 157) + "...";
    return status + ": " + reason;
}

void ProgressReporter::verdict(const Verdict& v) {
    progress_.add(std::string(to_string(v.status)), describe_item(v) + ": " + verdict_brief(v));
}

void VerdictsFileWriter::finish(RunOutcome& outcome) {
    if (outcome.run_dir.empty()) return;
    std::string lines;
    for (const auto& v : outcome.verdicts)
        lines += v.to_json().dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
    fs::path path = fs::path(outcome.run_dir) / "verdicts.jsonl";
    write_file_atomic(path, lines);
    outcome.files.emplace_back("verdicts (kbench's schema, a line each)", path.string());
}

void KernelBenchWriter::finish(RunOutcome& outcome) {
    if (outcome.run_dir.empty() || outcome.verdicts.empty()) return;
    for (const auto& [level, path] : write_kernelbench_results(outcome.run_dir, outcome.verdicts))
        outcome.files.emplace_back(
            level == 0 ? "KernelBench's eval_results.json (the run's one level)"
                       : fmt::format("KernelBench's eval_results.json, level {}", level),
            path);
}

namespace {

std::string percent(double share) {
    return fmt::format("{:.1f}%", 100 * share);
}

std::string signal_name(int signal) {
    const char* abbrev = sigabbrev_np(signal);
    return abbrev ? std::string("SIG") + abbrev : "signal " + std::to_string(signal);
}

}  // namespace

void SummaryReporter::finish(RunOutcome& o) {
    std::ostream& out = out_;
    if (o.signal)
        out << fmt::format("interrupted ({}): {} candidate(s) not evaluated yet\n",
                           signal_name(o.signal), o.not_evaluated);
    score::Score s = score::score_verdicts(o.verdicts, {0.0, 1.0, 1.5, 2.0}, o.exclude_flagged,
                                           o.unanswered.size());
    if (!o.timed) s.timed = false;
    out << score::format_score(s);
    std::map<std::string, int> by_device;
    for (const auto& v : o.verdicts)
        if (v.config.is_object()) ++by_device[v.config.value("device", std::string("?"))];
    if (by_device.size() > 1) {
        out << "  by device:";
        for (const auto& [device, count] : by_device) out << " " << device << " " << count;
        out << "\n";
    }
    if (!o.unanswered.empty()) {
        std::map<std::string, int> by_why;
        for (const auto& u : o.unanswered) ++by_why[u.why.substr(0, u.why.find(" to "))];
        std::string whys;
        for (const auto& [why, n] : by_why)
            whys += (whys.empty() ? "" : ", ") + fmt::format("{} {}", n, why);
        out << fmt::format(
            "  no usable candidate for {} problem(s) ({}): failures in every share\n",
            o.unanswered.size(), whys);
    }
    // KernelBench's own view: sample 0 only, its baseline.
    auto views = score::kernelbench_view(o.verdicts, o.problems, o.baseline);
    if (!views.empty() && o.timed) {
        out << "KernelBench's view (sample 0 of each problem; speedups against "
            << (o.baseline.is_null() ? std::string("each verdict's own baseline mean")
                                     : o.baseline_source)
            << "; fast_p counts speedups strictly above p):\n";
        for (const auto& v : views) out << score::format_kernelbench_view(v);
    }
    // A table a problem: its best candidate.
    std::map<std::pair<int, int>, const Verdict*> best;
    std::map<std::pair<int, int>, int> count;
    for (const auto& v : o.verdicts) {
        std::pair<int, int> at{v.problem.level.value_or(0), v.problem.id.value_or(0)};
        ++count[at];
        auto& b = best[at];
        if (!b || score::better_verdict(v, *b)) b = &v;
    }
    std::map<std::pair<int, int>, const Unanswered*> missing;
    for (const auto& u : o.unanswered) missing[{u.level, u.id}] = &u;
    if (!o.problems.empty()) {
        out << fmt::format("{:<5} {:<40} {:<9} {:<14} {:>9}  {}\n", "level", "problem", "samples",
                           "verdict", "speedup", "best candidate");
        for (const auto& p : o.problems) {
            std::pair<int, int> at{p.level, p.id};
            std::string name = p.name.size() > 40 ? p.name.substr(0, 37) + "..." : p.name;
            if (auto it = best.find(at); it != best.end()) {
                const Verdict& v = *it->second;
                std::string speedup =
                    v.speedup ? fmt::format("{:.2f}x", *v.speedup) : std::string("n/a");
                out << fmt::format("{:<5} {:<40} {:<9} {:<14} {:>9}  {}\n", p.level, name,
                                   count[at], std::string(to_string(v.status)), speedup,
                                   std::filesystem::path(v.candidate.path).filename().string());
            } else {
                auto m = missing.find(at);
                out << fmt::format("{:<5} {:<40} {:<9} {:<14} {:>9}  {}\n", p.level, name, 0,
                                   m != missing.end() ? "no candidate" : "not evaluated", "n/a",
                                   m != missing.end() ? m->second->why : std::string());
            }
        }
    }
    // Timings whose interval stayed wide.
    std::vector<std::string> unconverged;
    for (const auto& v : o.verdicts) {
        bool c = (!v.timing || v.timing->converged) && (!v.baseline || v.baseline->converged);
        if (v.status == Status::correct && v.timing && !c) unconverged.push_back(describe_item(v));
    }
    if (!unconverged.empty()) {
        out << fmt::format(
            "warning: {} timing(s) did not converge (the median's 95% interval stayed wider "
            "than {} of it before the sample or time cap); their speedups are less certain "
            "(--max-seconds / --max-samples raise the caps):\n",
            unconverged.size(), percent(o.target_rel_halfwidth));
        for (std::size_t i = 0; i < unconverged.size() && i < 10; ++i)
            out << "  " << unconverged[i] << "\n";
        if (unconverged.size() > 10)
            out << fmt::format("  ... and {} more (verdicts.jsonl: timing.converged)\n",
                               unconverged.size() - 10);
    }
    if (!o.files.empty()) {
        out << "files:\n";
        for (const auto& [what, path] : o.files) out << "  " << path << "  (" << what << ")\n";
    }
    if (o.signal && !o.resume.empty()) out << "to resume: " << o.resume << "\n";
    out << std::flush;
}

}  // namespace kbench::report
