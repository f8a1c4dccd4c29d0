#include "orchestrator/engine/phases.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <future>
#include <set>

#include "core/error.hpp"
#include "integrity/floor.hpp"
#include "integrity/static_review.hpp"
#include "orchestrator/engine/evaluator.hpp"
#include "orchestrator/engine/text.hpp"
#include "timing/speedup.hpp"

namespace kbench::orchestrator {
namespace {

using protocol::FaultKind;

void detail(PhaseContext& c, const std::string& line) {
    if (c.detail) c.detail(line);
}

std::string joined(const std::vector<std::string>& items) {
    std::string out;
    for (const auto& item : items) out += (out.empty() ? "" : ", ") + item;
    return out;
}

// Names in after that were not in before.
std::vector<std::string> added(const std::vector<std::string>& before,
                               const std::vector<std::string>& after) {
    std::vector<std::string> out;
    for (const auto& name : after)
        if (std::find(before.begin(), before.end(), name) == before.end()) out.push_back(name);
    return out;
}

// Signals the candidate's processes sent to kbench's zygote: an attack, whatever else happened.
std::optional<Decision> signalled(const ConfinedExit& e, PhaseContext& c) {
    if (e.signals.empty()) return std::nullopt;
    std::string what =
        "the candidate's processes sent signals to kbench's zygote: " + joined(e.signals);
    c.verdict.integrity.push_back({"signalled_kbench", Severity::reject, what});
    return Decision::rejected("signalled_kbench", what);
}

std::string fine_seconds(double seconds) {
    return fmt::format("{:.2f} s", seconds);
}

// "inputs 0.12 s, requests 1.40 s, ...", longest first.
std::string steps_text(const protocol::StepSeconds& steps) {
    std::vector<std::pair<std::string, double>> sorted(steps.begin(), steps.end());
    std::stable_sort(sorted.begin(), sorted.end(),
                     [](const auto& a, const auto& b) { return a.second > b.second; });
    std::string out;
    for (const auto& [name, seconds] : sorted)
        out += fmt::format("{}{} {:.3f} s", out.empty() ? "" : ", ", name, seconds);
    return out;
}

// A failed candidate's end: the judge lets go of its sandbox first, which tells the process to
// exit; finish then waits for that exit alone. Without it the process, its socket on the judge's
// side, waits for a request that never comes, and finish's grace (2 s) runs out before it is
// killed: on the H200 an incorrect candidate's verdict took 2.6-2.9 s, a correct one's 1.5-2.5 s.
ConfinedExit end_candidate(PhaseContext& c) {
    try {
        c.judge.detach();  // a fault here changes nothing: finish kills after its grace
    } catch (const InfraError&) {
        // the judge is gone: its next request says so
    }
    return c.sandbox.finish();
}

}  // namespace

Decision decide_fault(const protocol::Fault& fault, const std::string& phase_name,
                      PhaseContext& c) {
    const std::string phase =
        fault.where.empty() ? phase_name : phase_name + " (" + fault.where + ")";
    switch (fault.kind) {
        case FaultKind::reference:
            throw ReferenceError(
                "the reference program failed: " + error_line(fault.message) + "\n" + fault.message,
                "check the reference file with the same Python and device");
        case FaultKind::harness:
        case FaultKind::device:
            throw InfraError("the judge failed during " + phase + ": " + fault.message);
        default:
            break;
    }
    std::string reason;
    switch (fault.kind) {
        case FaultKind::candidate_overran:
            c.sandbox.kill();
            reason = fault.message;  // it names the phase and the limit
            break;
        case FaultKind::sandbox_ended: {
            ConfinedExit e = c.sandbox.finish();  // it is dead or dying: it reports how
            if (auto attack = signalled(e, c)) {
                c.verdict.log = capped(fault.message + "\n" + c.sandbox.output(), 16000);
                return *attack;
            }
            reason = "the sandbox died during " + phase + ": " +
                     (e.known ? e.status.describe() : std::string("how, is not known"));
            break;
        }
        case FaultKind::protocol_violation:
        case FaultKind::integrity:
            c.verdict.integrity.push_back({fault.rule.empty() ? "protocol_violation" : fault.rule,
                                           Severity::reject, fault.message});
            reason = phase + ": " + fault.message;
            c.sandbox.kill();
            break;
        default:
            reason = phase + ": " + capped(error_line(fault.message), 600);
            end_candidate(c);
            break;
    }
    Decision d = protocol::decision_of(fault, std::move(reason));
    c.verdict.log = capped(fault.message + "\n" + c.sandbox.output(), 16000);
    return d;
}

// Where the candidate's kernels took a negligible share: one call with them knocked out, on an
// input of its own, says whether the outputs depend on them. Its call failing there (it raised,
// overran or died) leaves that undecided, and the rule, which rejects, stands on the share;
// kbench's own faults and integrity faults are decided as in any phase.
static std::optional<Decision> ask_knockout(PhaseContext& c) {
    integrity::KnockoutOutcome& k = c.knockout;
    k.asked = true;
    auto reply = c.judge.knockout({c.kernels.candidate_kernels(), c.config.limits.correctness_s});
    if (!reply.ok()) {
        const protocol::Fault& f = *reply.fault;
        if (!protocol::is_candidates(f.kind) || f.kind == FaultKind::protocol_violation ||
            f.kind == FaultKind::integrity)
            return decide_fault(f, "the knockout check", c);
        k.detail = "the knockout call failed: " + capped(error_line(f.message), 300);
        return std::nullopt;
    }
    const protocol::KnockoutChecked& r = *reply.value;
    k.replaced = r.replaced;
    k.detail = r.done ? r.how : r.why;
    k.decided = r.done;
    k.changed = r.changed;
    if (r.done && r.kernels.is_object()) {
        // The records of that call must show none of the candidate's kernels running.
        std::string ran;
        for (const protocol::KernelRow& row : protocol::KernelsReported::from_json(r.kernels).rows)
            if (c.origins.is_candidates(row.name))
                ran += (ran.empty() ? "" : ", ") + integrity::kernel_display_name(row.name);
        if (!ran.empty()) {
            k.decided = false;
            k.detail = "its kernels still ran with their launches replaced: " + capped(ran, 300);
        }
    } else if (r.done) {
        k.decided = false;
        k.detail = "the knockout call's kernel records are missing";
    }
    detail(c, "  knockout: " +
                  std::string(k.decided ? (k.changed ? "the outputs change" : "the outputs stay")
                                        : "undecided") +
                  " (" + k.detail + ")");
    return std::nullopt;
}

// The kernel records of a phase: into the verdict's table, and the runtime rules over all
// records so far (a rejection ends the evaluation).
static PhaseOutcome kernel_rules(PhaseContext& c, const json& report, bool decide) {
    if (report.is_null()) return std::nullopt;
    c.kernels.add(protocol::KernelsReported::from_json(report), c.origins);
    Verdict& v = c.verdict;
    v.kernels = c.kernels.shares();
    v.kernel_activity = c.kernels.summary();
    static const std::set<std::string> rules = {"no_candidate_kernel", "decoy_kernel",
                                                "small_kernel_share", "work_outside_window",
                                                "kernel_records_dropped"};
    std::erase_if(v.integrity, [](const Finding& f) { return rules.count(f.rule) > 0; });
    if (decide && !c.knockout.asked && c.kernels.decoy_suspect() &&
        c.config.device_kind() != DeviceKind::cpu &&
        c.rules.severity("decoy_kernel") == Severity::reject)
        if (auto fault = ask_knockout(c)) return fault;
    if (c.knockout.asked && v.kernel_activity.is_object())
        v.kernel_activity["knockout"] = c.knockout.to_json();
    std::vector<Finding> findings = c.kernels.findings(c.rules, c.knockout);
    v.integrity.insert(v.integrity.end(), findings.begin(), findings.end());
    if (c.kernels.collected())
        detail(c,
               fmt::format("  kernels: the candidate's own took {:.1f}% of {:.1f} us",
                           100 * c.kernels.candidate_share(), double(c.kernels.call_ns()) / 1e3));
    const Finding* rejection = decide ? integrity::first_rejection(findings) : nullptr;
    if (!rejection) return std::nullopt;
    end_candidate(c);
    v.log = capped(c.sandbox.output(), 16000);
    return Decision::rejected(rejection->rule,
                              "runtime rule " + rejection->rule + ": " + rejection->detail);
}

// Findings of the runtime rules that do not stop a request, into the verdict: a rule the run
// denies rejects the candidate (the judge's own findings keep the severity it gave them
// otherwise: it decided them under the run's mode).
static PhaseOutcome runtime_findings(PhaseContext& c, std::vector<Finding> found) {
    for (Finding& f : found)
        if (c.rules.deny.count(f.rule)) f.severity = Severity::reject;
    c.verdict.integrity.insert(c.verdict.integrity.end(), found.begin(), found.end());
    const Finding* rejection = integrity::first_rejection(found);
    if (!rejection) return std::nullopt;
    Decision d = Decision::rejected(rejection->rule,
                                    "runtime rule " + rejection->rule + ": " + rejection->detail);
    end_candidate(c);
    return d;
}

// The problem's floor on this device: the verdict's speed of light, and rule below_floor.
static PhaseOutcome floor_rule(PhaseContext& c, const json& work) {
    Verdict& v = c.verdict;
    integrity::Floor f =
        integrity::compute_floor(work, c.gpu_entry, c.config.precision, c.constant_output);
    if (!f.known && c.config.device_kind() == DeviceKind::cpu)
        f.why = "on a CPU: the floor is a GPU's (peak rates per GPU)";
    v.floor = f.to_json();
    if (!f.known || !v.timing) return Decision::correct();
    double mine = v.timing->headline_us();
    if (mine > 0) v.floor["speed_of_light"] = f.floor_us / mine;
    detail(c, fmt::format("  floor {:.2f} us ({}-bound on {}): {:.1f}% of the speed of light",
                          f.floor_us, f.bound, f.gpu, 100 * f.floor_us / std::max(mine, 1e-9)));
    if (mine >= f.reject_below_us) return Decision::correct();
    Finding below{
        "below_floor", c.rules.severity("below_floor"),
        fmt::format("the {} time {:.3f} us is below {:.0f}% of the time the problem's "
                    "memory traffic takes at {:.0f} GB/s ({:.0f} bytes: {:.3f} us) on "
                    "{}",
                    v.timing->statistic, mine, 100 * integrity::kFloorMargin, f.bandwidth_gbps,
                    f.must_move_bytes, f.must_move_bytes / (f.bandwidth_gbps * 1e3), f.gpu)};
    v.integrity.push_back(below);
    if (below.severity == Severity::reject)
        return Decision::rejected("below_floor", "runtime rule below_floor: " + below.detail);
    return Decision::correct();
}

PhaseOutcome attach_phase(PhaseContext& c, int socket, std::int64_t sandbox_pid) {
    auto start = sandbox::Clock::now();
    const PhaseLimits& l = c.config.limits;
    auto reply = c.judge.attach(
        {sandbox_pid, l.load_s, l.call_factor, l.call_floor_s, l.first_call_s}, socket);
    if (!reply.ok()) return decide_fault(*reply.fault, "start", c);
    const protocol::Overhead& o = reply.value->overhead;
    detail(c, "  sandbox attached in " + fine_seconds(seconds_since(start)) + "; a request costs " +
                  std::to_string(int(o.fixed_us)) + " + " + std::to_string(int(o.per_call_us)) +
                  " us a call (spread " + std::to_string(int(o.spread_us)) + " us)");
    return std::nullopt;
}

PhaseOutcome load_phase(PhaseContext& c, const std::string& candidate_file) {
    auto start = sandbox::Clock::now();
    auto reply = c.judge.load({candidate_file, c.config.limits.load_s});
    if (!reply.ok()) return decide_fault(*reply.fault, "load", c);
    detail(c, "  candidate loaded in " + seconds_text(seconds_since(start)));
    return std::nullopt;
}

static PhaseOutcome attach_reference(PhaseContext& c, const char* phase);

PhaseOutcome correctness_phase(PhaseContext& c) {
    if (c.reference_first && c.config.timing.rounds() && c.start_reference)
        if (auto o = attach_reference(c, "correctness")) return o;
    auto reply = c.judge.correctness({c.config.limits.correctness_s});
    if (!reply.ok()) return decide_fault(*reply.fault, "correctness", c);
    const protocol::CorrectnessChecked& r = *reply.value;
    c.verdict.correctness.trials = r.trials;
    c.verdict.correctness.trials_passed = r.trials_passed;
    c.verdict.correctness.max_abs_diff = r.max_abs_diff;
    c.verdict.correctness.max_rel_diff = r.max_rel_diff;
    c.verdict.correctness.arbitration = r.arbitration;
    if (!r.memory.is_null()) c.verdict.memory = r.memory;
    if (!r.arbitration.is_null()) detail(c, "  arbitration: " + r.arbitration.dump());
    detail(c, "  correctness: " + std::to_string(r.trials_passed) + "/" + std::to_string(r.trials) +
                  " trials passed (" + steps_text(r.steps_s) + ")");
    bool passed = r.trials_passed == r.trials;
    if (auto o = kernel_rules(c, r.kernels, passed)) return o;
    if (passed) return std::nullopt;
    end_candidate(c);
    c.verdict.log = capped(c.sandbox.output(), 16000);
    return Decision::incorrect(r.failure);
}

// The reference's own sandbox beside the candidate's, for rounds. Whatever fails there is
// kbench's, not the candidate's: an infra_error.
static PhaseOutcome attach_reference(PhaseContext& c, const char* phase) {
    if (c.reference_attached) return std::nullopt;
    c.reference_attached = true;
    auto start = sandbox::Clock::now();
    auto [socket, pid] = c.start_reference();
    double started_s = seconds_since(start);
    const PhaseLimits& l = c.config.limits;
    auto harness = [&](const protocol::Fault& f) {
        return decide_fault({protocol::FaultKind::harness,
                             "the reference's own sandbox (the baseline of rounds): " + f.message},
                            phase, c);
    };
    auto attached = c.judge.attach(
        {pid, l.load_s, l.call_factor, l.call_floor_s, l.first_call_s, true}, socket);
    if (!attached.ok()) return harness(*attached.fault);
    double attached_s = seconds_since(start);
    auto loaded = c.judge.load({c.reference_file, l.load_s, true});
    if (!loaded.ok()) return harness(*loaded.fault);
    detail(c, "  the reference's own sandbox started in " + fine_seconds(started_s) +
                  ", attached in " + fine_seconds(attached_s - started_s) + ", loaded in " +
                  fine_seconds(seconds_since(start) - attached_s));
    return std::nullopt;
}

PhaseOutcome timing_phase(PhaseContext& c) {
    if (c.config.timing.rounds() && c.start_reference) {
        if (auto o = attach_reference(c, "timing")) return o;
        // Both sides on one core: only where both are sandboxes (a baseline timed apart runs
        // in the judge).
        if (c.pin_for_timing) c.pin_for_timing();
    }
    std::vector<std::string> threads_before = c.sandbox.threads();
    auto reply = c.judge.timing({c.config.timing, c.config.limits.timing_s});
    if (c.after_timing) c.after_timing();
    if (!reply.ok()) return decide_fault(*reply.fault, "timing", c);
    const protocol::CandidateTimed& r = *reply.value;
    if (!r.memory.is_null()) c.verdict.memory = r.memory;  // peaks since the attach: all phases
    if (!r.arbitration.is_null()) {
        json& a = c.verdict.correctness.arbitration;
        if (a.is_null()) a = json::object();
        a["timed_calls"] = r.arbitration;
    }
    if (!r.failure.empty()) {
        end_candidate(c);
        c.verdict.log = capped(c.sandbox.output(), 16000);
        return Decision::incorrect(r.failure + " (outputs of timed calls are checked too)");
    }
    c.verdict.timing = r.measured.summary();
    c.candidate_samples = r.measured.samples_us;
    c.round_baseline = r.baseline;
    c.round_ratios = r.round_ratios;
    if (!r.reference_kernels.is_null()) {
        // What the baseline ran, beside what the candidate ran: both sides' kernel time a call.
        integrity::KernelTable reference;
        reference.add(protocol::KernelsReported::from_json(r.reference_kernels), {});
        if (reference.collected()) {
            json kernels = json::array();
            for (const KernelShare& k : reference.shares())
                kernels.push_back({{"name", k.name}, {"count", k.count}, {"total_us", k.total_us}});
            json summary = reference.summary();
            c.verdict.baseline_kernels = {{"calls", summary["calls"]},
                                          {"kernel_us", summary["kernel_us"]},
                                          {"kernels", kernels}};
        }
    }
    if (auto o = kernel_rules(c, r.kernels, true)) return o;
    std::vector<Finding> found = r.findings;
    std::vector<std::string> threads = added(threads_before, c.sandbox.threads());
    if (!threads.empty())
        found.push_back({"threads_started", c.rules.severity("threads_started"),
                         "threads the candidate started while it was timed: " + joined(threads)});
    std::vector<std::string> processes = c.sandbox.processes();
    if (!processes.empty())
        found.push_back(
            {"processes_started", c.rules.severity("processes_started"),
             "processes the candidate started that still ran after timing: " + joined(processes)});
    if (auto o = runtime_findings(c, std::move(found))) return o;
    detail(c, "  timed: median " + std::to_string(int(c.verdict.timing->median_us)) + " us, n=" +
                  std::to_string(c.verdict.timing->n) + ", " + std::to_string(r.checked_calls) +
                  " timed call(s) checked (" + steps_text(r.steps_s) + ")");
    return std::nullopt;
}

// What the candidate's sandbox left when it ended: processes (killed with it), signals to kbench.
static PhaseOutcome after_exit(PhaseContext& c, const ConfinedExit& e) {
    if (!e.leftovers.empty())
        if (auto o = runtime_findings(
                c, {{"processes_left_behind", c.rules.severity("processes_left_behind"),
                     "processes still running when the candidate's process ended (killed): " +
                         joined(e.leftovers)}}))
            return o;
    return signalled(e, c);
}

PhaseOutcome finish_phase(PhaseContext& c) {
    auto start = sandbox::Clock::now();
    auto reply = c.judge.detach();
    if (!reply.ok()) return decide_fault(*reply.fault, "the end of the evaluation", c);
    ConfinedExit e = c.sandbox.finish();
    detail(c, "  sandbox detached and ended in " + fine_seconds(seconds_since(start)));
    return after_exit(c, e);
}

// Whether the rounds timed the baseline already (the judge's baseline request then only counts
// the problem's work for the floor).
static bool timed_in_rounds(const PhaseContext& c) {
    return c.round_baseline && c.round_ratios.size() >= 2;
}

static protocol::Reply<protocol::BaselineTimed> ask_baseline(PhaseContext& c) {
    return c.judge.baseline({c.config.timing, !timed_in_rounds(c)},
                            std::max(120.0, 2 * c.config.limits.timing_s));
}

static PhaseOutcome baseline_from(PhaseContext& c,
                                  const protocol::Reply<protocol::BaselineTimed>& reply) {
    if (!reply.ok()) return decide_fault(*reply.fault, "baseline", c);
    c.verdict.baseline_precision = reply.value->precision;
    timing::SpeedupEstimate estimate;
    if (timed_in_rounds(c)) {
        // Timed in alternating rounds with the candidate: drift hits both sides of each ratio.
        c.verdict.baseline = c.round_baseline->summary();
        estimate = timing::speedup_over_rounds(c.round_ratios, c.config.timing.rounds_systematic);
        c.verdict.speedup_rounds = int(c.round_ratios.size());
    } else {
        if (!reply.value->measured)
            return decide_fault(
                protocol::Fault{FaultKind::harness, "the baseline came back untimed"}, "baseline",
                c);
        const protocol::Measured& base = *reply.value->measured;
        c.verdict.baseline = base.summary();
        const TimingResult& mine = *c.verdict.timing;
        auto statistic =
            mine.statistic == "mean" ? timing::Statistic::mean : timing::Statistic::median;
        // The candidate's samples are the summary's source; the judge sent them with it.
        estimate = timing::estimate_speedup(base.samples_us, c.candidate_samples, statistic);
    }
    c.verdict.speedup = estimate.speedup;
    c.verdict.speedup_ci95 = {estimate.ci_lo, estimate.ci_hi};
    return floor_rule(c, reply.value->work);
}

PhaseOutcome baseline_phase(PhaseContext& c) {
    return baseline_from(c, ask_baseline(c));
}

PhaseOutcome end_beside_baseline(PhaseContext& c) {
    auto start = sandbox::Clock::now();
    auto reply = c.judge.detach();
    if (!reply.ok()) return decide_fault(*reply.fault, "the end of the evaluation", c);
    // The candidate's process is gone before the judge counts the problem's work (run on the
    // device, that count must not share it with the candidate's memory: a count that failed would
    // leave the floor unknown); the reference's own sandbox ends meanwhile (CUDA's teardown:
    // about 0.2 s on an H200). Nothing is timed until both are reaped.
    ConfinedExit e = c.sandbox.finish();
    double candidate_s = seconds_since(start);
    auto ending = std::async(std::launch::async, [&c] {
        if (c.end_reference) c.end_reference();
    });
    std::optional<protocol::Reply<protocol::BaselineTimed>> base;
    double count_s = 0;
    try {
        // The judge only counts the problem's work now: nothing is timed until the next
        // candidate's timing, and its process starts beside these ends.
        if (timed_in_rounds(c) && c.candidate_ended) c.candidate_ended();
        auto counting = sandbox::Clock::now();
        base = ask_baseline(c);
        count_s = seconds_since(counting);
    } catch (...) {
        ending.wait();
        throw;
    }
    ending.get();
    detail(c, "  sandboxes detached and ended in " + fine_seconds(seconds_since(start)) +
                  " (the candidate's " + fine_seconds(candidate_s) +
                  "), the reference's beside the judge's count of the problem's work (" +
                  fine_seconds(count_s) + ")");
    if (auto o = after_exit(c, e)) return o;
    return baseline_from(c, *base);
}

void run_pipeline(PhaseContext& c, int socket, std::int64_t sandbox_pid,
                  const std::string& candidate_file) {
    Verdict& v = c.verdict;
    auto decided = [&](PhaseOutcome outcome) {
        if (!outcome) return false;
        decide(v, *outcome);
        return true;
    };
    auto timed = [&](const char* phase, auto&& run) {
        auto start = sandbox::Clock::now();
        bool decision = decided(run());
        v.phases_s[phase] = seconds_since(start);
        return decision;
    };
    bool ended = timed("load",
                       [&] {
                           PhaseOutcome o = attach_phase(c, socket, sandbox_pid);
                           if (o) return o;
                           // Not before: the protocol's cost is measured with the machine as
                           // quiet as kbench keeps it.
                           if (c.prestart_reference) c.prestart_reference();
                           return load_phase(c, candidate_file);
                       }) ||
                 timed("correctness", [&] { return correctness_phase(c); });
    if (!ended && !c.config.measure) {
        if (!decided(finish_phase(c))) decide(v, Decision::correct());
        if (c.candidate_ended) c.candidate_ended();
        return;
    }
    if (!ended) {
        // A baseline timed in the judge waits for the candidate's processes to be gone; one timed
        // in rounds is done, and the sandboxes end beside the judge's last request.
        auto start = sandbox::Clock::now();
        ended = decided(timing_phase(c));
        if (!ended && !timed_in_rounds(c)) ended = decided(finish_phase(c));
        v.phases_s["timing"] = seconds_since(start);
    }
    if (!ended)
        timed("baseline",
              [&] { return timed_in_rounds(c) ? end_beside_baseline(c) : baseline_phase(c); });
    if (v.status != Status::correct) {
        // The judge lets go of the sandbox, whatever state the phase left it in.
        try {
            c.judge.detach();
        } catch (const InfraError&) {
        }
        // Every decision above ended the candidate's processes; the caller checks that too.
        if (c.candidate_ended) c.candidate_ended();
    }
}

}  // namespace kbench::orchestrator
