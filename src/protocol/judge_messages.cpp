#include "protocol/judge_messages.hpp"
#include "protocol/sandbox_messages.hpp"

#include <algorithm>
#include <cmath>

#include "core/error.hpp"

namespace kbench::protocol {
namespace {

double quantile(const std::vector<double>& sorted, double q) {
    if (sorted.empty()) return 0;
    double pos = q * double(sorted.size() - 1);
    auto lo = std::size_t(std::floor(pos));
    auto hi = std::min(lo + 1, sorted.size() - 1);
    return sorted[lo] + (pos - double(lo)) * (sorted[hi] - sorted[lo]);
}

}  // namespace

json steps_json(const StepSeconds& steps) {
    json j = json::object();
    for (const auto& [name, seconds] : steps) j[name] = real_json(seconds);
    return j;
}

StepSeconds steps_from(const json& j, const std::string& where) {
    if (!j.is_object()) throw ProtocolError(where + ": steps_s is not an object");
    StepSeconds steps;
    for (const auto& [name, value] : j.items()) {
        double seconds = real_from_json(value, where + ".steps_s." + name);
        if (!std::isfinite(seconds) || seconds < 0)
            throw ProtocolError(where + ": step " + name + " took " + std::to_string(seconds) +
                                " s");
        steps[name] = seconds;
    }
    return steps;
}

json JudgeHello::to_json() const {
    return json{{"role", "judge"},
                {"device", device},
                {"torch", torch},
                {"cuda", cuda},
                {"python", python}};
}

JudgeHello JudgeHello::from_json(const json& j) {
    Fields f(j, "judge hello");
    if (f.text("role") != "judge") throw ProtocolError("the judge's hello names another role");
    return {f.object("device"), f.text("torch"), f.text("cuda"), f.text("python")};
}

json PrepareProblem::to_json() const {
    return json{{"name", name},
                {"code", code},
                {"sha256", sha256},
                {"seed", seed},
                {"trials", trials},
                {"precision", precision},
                {"mode", mode},
                {"atol", real_json(atol)},
                {"rtol", real_json(rtol)},
                {"tf32", std::string(to_string(tf32))},
                {"device_memory", device_memory},
                {"rounds", rounds}};
}

PrepareProblem PrepareProblem::from_json(const json& j) {
    Fields f(j, "prepare request");
    return {f.text("name"),    f.text("code"),      f.text("sha256"),         f.count("seed"),
            f.small("trials"), f.text("precision"), f.text("mode"),           f.real("atol"),
            f.real("rtol"),    tf32_field(f),       f.count("device_memory"), f.flag("rounds")};
}

json ProblemPrepared::to_json() const {
    return json{{"cached", cached},           {"inputs_seconds", real_json(inputs_seconds)},
                {"trial_bytes", trial_bytes}, {"precision", precision},
                {"memory", memory.to_json()}, {"device_bytes", device_bytes}};
}

ProblemPrepared ProblemPrepared::from_json(const json& j) {
    Fields f(j, "prepare reply");
    return {f.flag("cached"),
            f.real("inputs_seconds"),
            f.count("trial_bytes"),
            f.object("precision"),
            ProblemMemory::from_json(f.object("memory")),
            f.count("device_bytes")};
}

json AttachRequest::to_json() const {
    return json{{"sandbox_pid", sandbox_pid},
                {"limit_s", real_json(limit_s)},
                {"call_factor", real_json(call_factor)},
                {"call_floor_s", real_json(call_floor_s)},
                {"first_call_s", real_json(first_call_s)},
                {"reference", reference}};
}

AttachRequest AttachRequest::from_json(const json& j) {
    Fields f(j, "attach request");
    return {f.integer("sandbox_pid"), f.real("limit_s"),      f.real("call_factor"),
            f.real("call_floor_s"),   f.real("first_call_s"), f.flag("reference")};
}

json Overhead::to_json() const {
    return json{{"fixed_us", real_json(fixed_us)},
                {"per_call_us", real_json(per_call_us)},
                {"spread_us", real_json(spread_us)}};
}

Overhead Overhead::from_json(const json& j) {
    Fields f(j, "overhead");
    return {f.real("fixed_us"), f.real("per_call_us"), f.real("spread_us")};
}

json SandboxAttached::to_json() const {
    return json{{"overhead", overhead.to_json()}};
}

SandboxAttached SandboxAttached::from_json(const json& j) {
    Fields f(j, "attach reply");
    return {Overhead::from_json(f.object("overhead"))};
}

json LoadRequest::to_json() const {
    return json{{"candidate_file", candidate_file},
                {"limit_s", real_json(limit_s)},
                {"reference", reference}};
}

LoadRequest LoadRequest::from_json(const json& j) {
    Fields f(j, "load request");
    return {f.text("candidate_file"), f.real("limit_s"), f.flag("reference")};
}

json CorrectnessRequest::to_json() const {
    return json{{"limit_s", real_json(limit_s)}};
}

CorrectnessRequest CorrectnessRequest::from_json(const json& j) {
    Fields f(j, "correctness request");
    return {f.real("limit_s")};
}

json CorrectnessChecked::to_json() const {
    return json{{"trials", trials},
                {"trials_passed", trials_passed},
                {"max_abs_diff", real_json(max_abs_diff)},
                {"max_rel_diff", real_json(max_rel_diff)},
                {"failure", failure},
                {"arbitration", arbitration},
                {"kernels", kernels},
                {"steps_s", steps_json(steps_s)},
                {"memory", memory}};
}

namespace {

// Null, or kernel records as a sandbox reported them (checked field by field).
json kernels_from(const Fields& f, const char* what, const char* field = "kernels") {
    const json& k = f.any(field);
    if (k.is_null()) return k;
    if (!k.is_object()) throw ProtocolError(std::string(what) + ": " + field + " is not an object");
    return KernelsReported::from_json(k).to_json();
}

}  // namespace

json KnockoutRequest::to_json() const {
    return json{{"names", names}, {"limit_s", real_json(limit_s)}};
}

KnockoutRequest KnockoutRequest::from_json(const json& j) {
    Fields f(j, "knockout request");
    return {f.texts("names"), f.real("limit_s")};
}

json KnockoutChecked::to_json() const {
    return json{{"done", done},       {"why", why}, {"replaced", replaced},
                {"changed", changed}, {"how", how}, {"kernels", kernels}};
}

KnockoutChecked KnockoutChecked::from_json(const json& j) {
    Fields f(j, "knockout reply");
    return {f.flag("done"),    f.text("why"), f.count("replaced"),
            f.flag("changed"), f.text("how"), kernels_from(f, "knockout reply")};
}

CorrectnessChecked CorrectnessChecked::from_json(const json& j) {
    Fields f(j, "correctness reply");
    CorrectnessChecked c{f.small("trials"),
                         f.small("trials_passed"),
                         f.real("max_abs_diff"),
                         f.real("max_rel_diff"),
                         f.text("failure"),
                         f.any("arbitration"),
                         kernels_from(f, "correctness reply"),
                         steps_from(f.object("steps_s"), "correctness reply"),
                         f.any("memory")};
    if (!c.arbitration.is_null() && !c.arbitration.is_object())
        throw ProtocolError("correctness reply: arbitration is neither null nor an object");
    if (c.trials_passed < 0 || c.trials_passed > c.trials)
        throw ProtocolError("correctness reply: " + std::to_string(c.trials_passed) + " of " +
                            std::to_string(c.trials) + " trials passed");
    if (c.trials_passed < c.trials && c.failure.empty())
        throw ProtocolError("correctness reply: trials failed without a reason");
    return c;
}

json Measured::to_json() const {
    return json{{"samples_us", reals_json(samples_us)},
                {"converged", converged},
                {"warmup_calls", warmup_calls},
                {"calls", calls},
                {"outside_stream_samples", outside_stream_samples},
                {"statistic", statistic}};
}

Measured Measured::from_json(const json& j) {
    Fields f(j, "measurement");
    Measured m{f.reals("samples_us"),
               f.flag("converged"),
               f.small("warmup_calls"),
               f.count("calls"),
               f.small("outside_stream_samples"),
               f.text("statistic")};
    if (m.samples_us.empty()) throw ProtocolError("a measurement without samples");
    for (double s : m.samples_us)
        if (!std::isfinite(s) || s < 0)
            throw ProtocolError("a measurement with a sample of " + std::to_string(s) + " us");
    if (m.statistic != "median" && m.statistic != "mean")
        throw ProtocolError("a measurement whose statistic is '" + m.statistic + "'");
    return m;
}

TimingResult Measured::summary() const {
    std::vector<double> sorted = samples_us;
    std::sort(sorted.begin(), sorted.end());
    TimingResult t;
    double sum = 0;
    for (double s : sorted) sum += s;
    t.median_us = quantile(sorted, 0.5);
    t.mean_us = sorted.empty() ? 0 : sum / double(sorted.size());
    t.min_us = sorted.empty() ? 0 : sorted.front();
    t.max_us = sorted.empty() ? 0 : sorted.back();
    double squares = 0;
    for (double s : sorted) squares += (s - t.mean_us) * (s - t.mean_us);
    t.std_us = sorted.empty() ? 0 : std::sqrt(squares / double(sorted.size()));
    t.p10_us = quantile(sorted, 0.1);
    t.p90_us = quantile(sorted, 0.9);
    t.n = int(sorted.size());
    t.converged = converged;
    t.statistic = statistic;
    return t;
}

json TimingRequest::to_json() const {
    return json{{"timing", timing.to_json()}, {"limit_s", real_json(limit_s)}};
}

TimingRequest TimingRequest::from_json(const json& j) {
    Fields f(j, "timing request");
    return {TimingConfig::from_json(f.object("timing")), f.real("limit_s")};
}

json CandidateTimed::to_json() const {
    json findings_out = json::array();
    for (const auto& f : findings) findings_out.push_back(finding_json(f));
    return json{{"measured", measured.to_json()},
                {"findings", findings_out},
                {"checked_calls", checked_calls},
                {"failure", failure},
                {"arbitration", arbitration},
                {"kernels", kernels},
                {"reference_kernels", reference_kernels},
                {"baseline", baseline ? baseline->to_json() : json(nullptr)},
                {"round_ratios", reals_json(round_ratios)},
                {"steps_s", steps_json(steps_s)},
                {"memory", memory}};
}

CandidateTimed CandidateTimed::from_json(const json& j) {
    Fields f(j, "timing reply");
    CandidateTimed t;
    t.failure = f.text("failure");
    t.kernels = kernels_from(f, "timing reply");
    t.reference_kernels = kernels_from(f, "timing reply", "reference_kernels");
    t.checked_calls = f.count("checked_calls");
    t.arbitration = f.any("arbitration");
    if (!t.arbitration.is_null() && !t.arbitration.is_object())
        throw ProtocolError("timing reply: arbitration is neither null nor an object");
    for (const json& item : f.array("findings")) t.findings.push_back(finding_from(item));
    if (t.failure.empty()) t.measured = Measured::from_json(f.object("measured"));
    if (!f.any("baseline").is_null()) t.baseline = Measured::from_json(f.object("baseline"));
    t.round_ratios = f.reals("round_ratios");
    t.steps_s = steps_from(f.object("steps_s"), "timing reply");
    t.memory = f.any("memory");
    for (double r : t.round_ratios)
        if (!std::isfinite(r) || r <= 0)
            throw ProtocolError("timing reply: a round's ratio of " + std::to_string(r));
    return t;
}

json BaselineRequest::to_json() const {
    return json{{"timing", timing.to_json()}, {"time", time}, {"compile", compile}};
}

BaselineRequest BaselineRequest::from_json(const json& j) {
    Fields f(j, "baseline request");
    return {TimingConfig::from_json(f.object("timing")), f.flag("time"), f.text("compile")};
}

json BaselineTimed::to_json() const {
    return json{{"measured", measured ? measured->to_json() : json()},
                {"precision", precision},
                {"work", work},
                {"compile_s", real_json(compile_s)}};
}

BaselineTimed BaselineTimed::from_json(const json& j) {
    Fields f(j, "baseline reply");
    BaselineTimed t{std::nullopt, f.object("precision"), f.object("work"), f.real("compile_s")};
    if (!f.any("measured").is_null()) t.measured = Measured::from_json(f.object("measured"));
    return t;
}

json AuditRequest::to_json() const {
    return json{{"trials", trials}};
}

AuditRequest AuditRequest::from_json(const json& j) {
    Fields f(j, "audit request");
    return {f.small("trials")};
}

json Audited::to_json() const {
    return json{{"trials", trials},
                {"arbiter", arbiter},
                {"device", device},
                {"max_abs_diff", real_json(max_abs_diff)},
                {"max_rel_diff", real_json(max_rel_diff)},
                {"mismatched", mismatched},
                {"values", values},
                {"worst", worst},
                {"skipped", skipped},
                {"seconds", real_json(seconds)},
                {"health", health},
                {"work", work}};
}

Audited Audited::from_json(const json& j) {
    Fields f(j, "audit reply");
    return {f.small("trials"),      f.text("arbiter"),      f.text("device"),
            f.real("max_abs_diff"), f.real("max_rel_diff"), f.count("mismatched"),
            f.count("values"),      f.text("worst"),        f.text("skipped"),
            f.real("seconds"),      f.object("health"),     f.object("work")};
}

json Health::to_json() const {
    return json{{"healthy", healthy}, {"error", error}};
}

Health Health::from_json(const json& j) {
    Fields f(j, "health reply");
    return {f.flag("healthy"), f.text("error")};
}

json finding_json(const Finding& f) {
    return json{
        {"rule", f.rule}, {"severity", std::string(to_string(f.severity))}, {"detail", f.detail}};
}

Finding finding_from(const json& j) {
    Fields f(j, "finding");
    std::string severity = f.text("severity");
    std::optional<Severity> known = parse_severity(severity);
    if (!known) throw ProtocolError("a finding of severity '" + severity + "'");
    Finding out{f.text("rule"), *known, f.text("detail")};
    return out;
}

}  // namespace kbench::protocol
