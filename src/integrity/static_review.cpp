#include "integrity/static_review.hpp"

#include <algorithm>
#include <chrono>

#include "core/error.hpp"
#include "core/sha256.hpp"
#include "process/python_run.hpp"

namespace kbench::integrity {
namespace {

// The analyzer's time is linear in the source: a 1 MiB file takes seconds, so this only stops
// one that found a way around that.
constexpr double kAnalyzerSeconds = 60;
// Larger sources are not read at all (model-written candidates are tens of kilobytes).
constexpr std::size_t kMaxSourceBytes = 1 << 20;

}  // namespace

std::string describe(const StaticReport::Seen& seen) {
    std::string out = seen.reason;
    if (seen.line > 0) out += " (line " + std::to_string(seen.line) + ": " + seen.evidence + ")";
    return out;
}

std::vector<Finding> StaticReport::findings(const RulePolicy& policy) const {
    std::vector<Finding> out;
    for (const Seen& s : seen)
        out.push_back({s.rule, policy.severity(s.rule), describe(s), s.line, s.evidence});
    return out;
}

StaticReport StaticReport::from_json(const json& j) {
    if (!j.is_object() || !j.contains("findings") || !j["findings"].is_array())
        throw InfraError("the static analyzer's report has no findings list");
    StaticReport r;
    for (const json& f : j["findings"]) {
        if (!f.is_object() || !f.contains("rule") || !f["rule"].is_string())
            throw InfraError("the static analyzer reported a finding without a rule");
        r.seen.push_back({f["rule"].get<std::string>(), f.value("line", 0),
                          f.value("evidence", std::string()), f.value("reason", std::string())});
    }
    r.kernels = j.value("kernels", json::object());
    r.markers = j.value("markers", json::array());
    r.parsed = j.value("parsed", true);
    return r;
}

StaticReview::StaticReview(std::string python, fs::path analyzer)
    : python_(std::move(python)), analyzer_(std::move(analyzer)) {}

const StaticReport& StaticReview::review(const std::string& code, Backend backend,
                                         Precision precision) {
    std::string key = sha256_hex(code) + "/" + std::string(to_string(backend)) + "/" +
                      std::string(to_string(precision));
    {
        std::lock_guard<std::mutex> guard(mutex_);
        if (auto it = reports_.find(key); it != reports_.end()) return it->second;
    }
    StaticReport report = run(code, backend, precision);
    std::lock_guard<std::mutex> guard(mutex_);
    return reports_.emplace(key, std::move(report)).first->second;
}

StaticReport StaticReview::run(const std::string& code, Backend backend,
                               Precision precision) const {
    if (code.size() > kMaxSourceBytes) {
        StaticReport report;
        report.seen.push_back(
            {"oversized", 0, "",
             "the source is " + std::to_string(code.size()) + " bytes, over the " +
                 std::to_string(kMaxSourceBytes) +
                 " that kbench reads: it was neither analyzed nor built (write the kernel "
                 "without padding, or generated tables, in the source)"});
        return report;
    }
    json request = {{"source", code},
                    {"backend", std::string(to_string(backend))},
                    {"precision", std::string(to_string(precision))}};
    auto start = std::chrono::steady_clock::now();
    // -I: no user site, no environment, no current folder on the path; -S: no site packages
    // at all. The analyzer needs the standard library only.
    sandbox::CommandOutput out =
        sandbox::run_python({python_,
                             analyzer_.string(),
                             false,
                             {},
                             sandbox::PythonIsolation::standard_library,
                             kAnalyzerSeconds,
                             request.dump(-1, ' ', false, json::error_handler_t::replace)});
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    StaticReport report;
    if (!out.status.exited || out.status.code != 0) {
        // The candidate's source could not be read through: never a free pass.
        std::string how = seconds >= kAnalyzerSeconds
                              ? "it ran out of its " + std::to_string(int(kAnalyzerSeconds)) + " s"
                              : out.status.describe();
        report.seen.push_back(
            {"unanalyzable", 0, "",
             "the static analyzer failed on this source (" + how +
                 "): a source it cannot read through is rejected under every policy"});
        report.seconds = seconds;
        return report;
    }
    try {
        report = StaticReport::from_json(json::parse(out.out));
    } catch (const json::exception& e) {
        throw InfraError(std::string("the static analyzer printed no report: ") + e.what() + "\n" +
                         out.err);
    }
    report.seconds = seconds;
    return report;
}

const Finding* first_rejection(const std::vector<Finding>& findings) {
    for (const Finding& f : findings)
        if (f.severity == Severity::reject) return &f;
    return nullptr;
}

std::string rejection_reason(const std::vector<Finding>& findings) {
    std::vector<std::string> rules;
    for (const Finding& f : findings)
        if (f.severity == Severity::reject &&
            std::find(rules.begin(), rules.end(), f.rule) == rules.end())
            rules.push_back(f.rule);
    std::string out = rules.size() == 1 ? "static rule " : "static rules ";
    for (std::size_t i = 0; i < rules.size(); ++i) out += (i ? ", " : "") + rules[i];
    return out;
}

}  // namespace kbench::integrity
