#include "llm/feedback.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <sstream>
#include <vector>

namespace kbench::llm {

namespace {

constexpr std::size_t kReasonLimit = 2000;
constexpr std::size_t kLogLimit = 6000;
constexpr std::size_t kLogLines = 80;
constexpr std::size_t kLogLineLimit = 500;
constexpr std::size_t kErrorLinesLimit = 1500;
constexpr std::size_t kKernelRows = 15;
constexpr std::size_t kFindings = 8;

// The text's first limit characters, saying how many were left out.
std::string capped(const std::string& text, std::size_t limit) {
    if (text.size() <= limit) return text;
    return text.substr(0, limit) + fmt::format(" [... {} more characters]", text.size() - limit);
}

std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
        if (!line.empty() && line.back() == '\r') line.pop_back();
        lines.push_back(std::move(line));
    }
    while (!lines.empty() && lines.back().find_first_not_of(" \t") == std::string::npos)
        lines.pop_back();
    return lines;
}

std::string duration(double us) {
    return us >= 1000 ? fmt::format("{:.3f} ms", us / 1000) : fmt::format("{:.1f} us", us);
}

std::string_view status_meaning(Status status) {
    switch (status) {
        case Status::correct:
            return "the outputs match the reference's";
        case Status::incorrect:
            return "the outputs differ from the reference's";
        case Status::rejected:
            return "the program broke an integrity rule";
        case Status::compile_error:
            return "the program's extension did not compile";
        case Status::load_error:
            return "the program could not be loaded or ModelNew could not be built";
        case Status::runtime_error:
            return "ModelNew.forward raised an error";
        case Status::timeout:
            return "a phase ran past its time limit";
        case Status::crash:
            return "the process running the program died";
        case Status::infra_error:
            return "the evaluation itself failed, not the program";
    }
    return "";
}

bool shows_output(Status status) {
    return status == Status::compile_error || status == Status::load_error ||
           status == Status::runtime_error || status == Status::crash || status == Status::timeout;
}

bool mentions_error(const std::string& line) {
    std::string low = line;
    std::transform(low.begin(), low.end(), low.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return low.find("error") != std::string::npos;
}

// The first lines naming an error among those the tail leaves out (a compiler's first error is
// often the one that matters).
std::string early_errors(const std::vector<std::string>& lines, std::size_t end) {
    std::string out;
    for (std::size_t i = 0; i < end; ++i) {
        if (!mentions_error(lines[i])) continue;
        std::string line = "| " + capped(lines[i], 300) + "\n";
        if (out.size() + line.size() > kErrorLinesLimit) break;
        out += line;
    }
    return out;
}

// The output's last lines, each and all of them capped, with a note of what was cut.
std::string output_section(const std::string& log) {
    auto lines = lines_of(log);
    if (lines.empty()) return {};
    std::size_t start = lines.size() > kLogLines ? lines.size() - kLogLines : 0;
    std::string errors = early_errors(lines, start);
    std::vector<std::string> tail;
    std::size_t size = errors.size();
    for (std::size_t i = lines.size(); i > start; --i) {
        std::string line = "| " + capped(lines[i - 1], kLogLineLimit) + "\n";
        if (size + line.size() > kLogLimit) break;
        size += line.size();
        tail.push_back(std::move(line));
    }
    std::string out;
    if (tail.size() == lines.size()) {
        out = "Output of the program:\n";
    } else {
        out = fmt::format("Output of the program (the last {} of {} lines):\n", tail.size(),
                          lines.size());
        if (!errors.empty()) out += "Earlier lines that mention an error:\n" + errors + "Then:\n";
    }
    for (auto line = tail.rbegin(); line != tail.rend(); ++line) out += *line;
    return out;
}

std::string correctness_section(const Verdict& v) {
    const auto& c = v.correctness;
    if (v.status != Status::incorrect && c.trials == 0) return {};
    return fmt::format(
        "Correctness: {} of {} trials passed; max_abs_diff {:.4g}, max_rel_diff {:.4g} (the "
        "reason above says where the largest difference is)\n",
        c.trials_passed, c.trials, c.max_abs_diff, c.max_rel_diff);
}

std::string integrity_section(const std::vector<Finding>& findings) {
    if (findings.empty()) return {};
    std::string out = "Integrity findings:\n";
    for (std::size_t i = 0; i < findings.size() && i < kFindings; ++i) {
        const Finding& f = findings[i];
        out += "- " + std::string(to_string(f.severity)) + " " + f.rule;
        if (f.line > 0) out += fmt::format(", line {}", f.line);
        if (!f.evidence.empty()) out += " (" + capped(f.evidence, 120) + ")";
        out += ": " + capped(f.detail, 300) + "\n";
    }
    if (findings.size() > kFindings)
        out += fmt::format("- and {} more\n", findings.size() - kFindings);
    return out;
}

std::string timing_section(const Verdict& v) {
    if (!v.timing) return {};
    const TimingResult& t = *v.timing;
    std::string out = fmt::format("Timing: your program {} ({} of {} samples)",
                                  duration(t.headline_us()), t.statistic, t.n);
    if (v.baseline)
        out += fmt::format(", the baseline (PyTorch, {}) {}", v.baseline_kind,
                           duration(v.baseline->headline_us()));
    out += "\n";
    if (v.speedup) {
        out += fmt::format("Speedup: {:.3f}x", *v.speedup);
        if (v.speedup_ci95)
            out += fmt::format(" (95% interval {:.3f} to {:.3f})", v.speedup_ci95->first,
                               v.speedup_ci95->second);
        out += *v.speedup >= 1 ? ": faster than the baseline\n" : ": slower than the baseline\n";
    }
    return out;
}

std::string floor_section(const json& floor) {
    if (!floor.is_object() || !floor.value("known", false) || !floor.contains("speed_of_light"))
        return {};
    return fmt::format(
        "Speed of light: the floor for this problem is {} ({}-bound on {}); your program reaches "
        "{:.1f}% of it\n",
        duration(floor.value("floor_us", 0.0)), floor.value("bound", std::string("?")),
        floor.value("gpu", std::string("?")), 100 * floor.value("speed_of_light", 0.0));
}

std::string kernel_section(const Verdict& v) {
    if (v.kernels.empty()) {
        if (v.kernel_activity.is_object() && !v.kernel_activity.value("collected", false))
            return "Kernels: not recorded (" +
                   capped(v.kernel_activity.value("why", std::string("?")), 300) + ")\n";
        return {};
    }
    std::vector<KernelShare> rows = v.kernels;
    std::stable_sort(rows.begin(), rows.end(),
                     [](const auto& a, const auto& b) { return a.total_us > b.total_us; });
    std::string out = "Kernels in your program's calls, by total time";
    if (rows.size() > kKernelRows)
        out += fmt::format(" (the first {} of {})", kKernelRows, rows.size());
    out += ":\n  total us   share  count  origin     name\n";
    for (std::size_t i = 0; i < rows.size() && i < kKernelRows; ++i)
        out += fmt::format("{:>10.1f}  {:>5.1f}%  {:>5}  {:<9}  {}\n", rows[i].total_us,
                           100 * rows[i].share, rows[i].count, rows[i].origin,
                           capped(rows[i].name, 160));
    return out;
}

}  // namespace

std::string feedback_text(const Verdict& v) {
    std::string out =
        fmt::format("Status: {} ({})\n", to_string(v.status), status_meaning(v.status));
    if (!v.reason.empty()) out += "Reason: " + capped(v.reason, kReasonLimit) + "\n";
    out += correctness_section(v);
    if (shows_output(v.status)) out += output_section(v.log);
    out += integrity_section(v.integrity);
    out += timing_section(v);
    out += floor_section(v.floor);
    if (v.timing || !v.kernels.empty()) out += kernel_section(v);
    if (out.size() <= kFeedbackLimit) return out;
    const std::string cut = fmt::format("\n[feedback cut to {} characters]\n", kFeedbackLimit);
    return out.substr(0, kFeedbackLimit - cut.size()) + cut;
}

std::string extraction_feedback(const Extraction& extraction) {
    std::string out;
    if (!extraction.code) out = "No program was evaluated: " + extraction.error + "\n";
    if (!extraction.notes.empty())
        out += extraction.code ? "How your program was taken from the answer:\n" : "Also:\n";
    for (const auto& note : extraction.notes) out += "- " + note + "\n";
    return out;
}

}  // namespace kbench::llm
