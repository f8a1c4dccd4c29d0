#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "core/verdict.hpp"
#include "integrity/kernels.hpp"
#include "integrity/rules.hpp"
#include "orchestrator/engine/judge_client.hpp"

namespace kbench::orchestrator {

// One candidate's evaluation after its build, as a pipeline of phases. Each phase asks the judge
// for one thing and either lets the evaluation go on (nullopt) or decides the verdict.
struct PhaseContext {
    const CheckConfig& config;
    JudgeClient& judge;
    SandboxHandle& sandbox;
    Verdict& verdict;
    std::function<void(const std::string&)> detail;  // a progress line (may be empty)
    std::vector<double> candidate_samples = {};      // the timing phase's, for the speedup
    // kbench's protocol: the baseline timed in rounds alternating with the candidate's, and
    // each round's ratio; the speedup and its interval come from them.
    std::optional<protocol::Measured> round_baseline = {};
    std::vector<double> round_ratios = {};
    integrity::RulePolicy rules = {};          // the run's integrity policy
    integrity::KernelOrigins origins = {};     // which kernels are the candidate's
    integrity::KernelTable kernels = {};       // what ran, phase after phase
    integrity::KnockoutOutcome knockout = {};  // the decoy check, once asked
    json gpu_entry = nullptr;                  // the device's peak rates, or null
    bool constant_output = false;              // the problem's output ignores its inputs
    // kbench's protocol with rounds: starts the reference's own sandbox (its control socket,
    // which the caller hands on, and its pid) and names the file that holds the reference as a
    // candidate; none where the caller cannot (the baseline is then timed apart).
    std::function<std::pair<int, std::int64_t>()> start_reference = {};
    // Starts that sandbox's process early, once the candidate's sandbox is attached, so that its
    // start (CUDA's included) goes on while the candidate loads and is checked; set with
    // start_reference, by a caller that will time in rounds.
    std::function<void()> prestart_reference = {};
    std::string reference_file = {};
    // The reference's own sandbox makes the reference's outputs (the memory plan's
    // reference_exports): it is attached before the correctness phase, not the timing.
    bool reference_first = false;
    bool reference_attached = false;
    // Pins both sandboxes to the device's timing core, once both are loaded and
    // before the candidate is timed; may be empty.
    std::function<void()> pin_for_timing = {};
    // Right after the timing: whether every thread stayed pinned, and lets them go (may be
    // empty).
    std::function<void()> after_timing = {};
    // Ends the reference's own sandbox once the rounds are done (beside the judge's last
    // request); may be empty.
    std::function<void()> end_reference = {};
    // Once the candidate's processes are gone and nothing more is timed for it (the rounds
    // done, or no timing at all): the caller may start the next candidate's sandbox. May be
    // empty.
    std::function<void()> candidate_ended = {};
};

using PhaseOutcome = std::optional<Decision>;

// Where a fault becomes a decision (protocol::decision_of): its reason, a rejecting finding for
// integrity faults, the candidate's output as the log. Faults that are not
// the candidate's throw: ReferenceError for the reference, InfraError for kbench's own.
Decision decide_fault(const protocol::Fault& fault, const std::string& phase, PhaseContext& c);

// The sandbox is handed to the judge, which measures the protocol's cost with it.
PhaseOutcome attach_phase(PhaseContext& c, int socket, std::int64_t sandbox_pid);
PhaseOutcome load_phase(PhaseContext& c, const std::string& candidate_file);
PhaseOutcome correctness_phase(PhaseContext& c);
// Times the candidate (verdict.timing, findings); the threads and processes it started while
// timed are named.
PhaseOutcome timing_phase(PhaseContext& c);
// Ends the sandbox (everything it started goes with it) before anything else is timed.
PhaseOutcome finish_phase(PhaseContext& c);
// The reference, timed in the judge: verdict.baseline and the speedup; decides correct.
PhaseOutcome baseline_phase(PhaseContext& c);
// With rounds (the baseline timed already): the judge lets go of both sandboxes, whose processes
// end (the candidate's first, then the reference's) while the judge counts the problem's work for
// the floor; then the speedup from the rounds, as baseline_phase.
PhaseOutcome end_beside_baseline(PhaseContext& c);

// The phases in order, until one decides: the verdict's status, reason and phase times.
void run_pipeline(PhaseContext& c, int socket, std::int64_t sandbox_pid,
                  const std::string& candidate_file);

}  // namespace kbench::orchestrator
