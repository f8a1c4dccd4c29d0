#include "report/reporter.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <sstream>

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
        row("speedup", fmt::format("{:.3f}x{}", *v.speedup, ci));
    }
    if (v.floor.is_object() && v.floor.value("known", false) && v.floor.contains("speed_of_light"))
        row("floor", fmt::format("{:.2f} us ({}-bound on {}): {:.1f}% of the speed of light",
                                 v.floor.value("floor_us", 0.0),
                                 v.floor.value("bound", std::string("?")),
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
    for (const auto& f : v.integrity) row("integrity", f.severity + " " + f.rule + ": " + f.detail);
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

}  // namespace kbench::report
