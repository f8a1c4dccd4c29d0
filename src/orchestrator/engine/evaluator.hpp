#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "core/config.hpp"
#include "core/error.hpp"
#include "core/memory_plan.hpp"
#include "core/verdict.hpp"
#include "integrity/kernels.hpp"
#include "orchestrator/builds/builder_pool.hpp"
#include "orchestrator/devices/device_turns.hpp"
#include "orchestrator/workers/sandbox_policy.hpp"
#include "orchestrator/workers/sandbox_process.hpp"
#include "orchestrator/workers/worker_process.hpp"
#include "protocol/judge_messages.hpp"

namespace kbench::orchestrator {

struct ProblemSpec {
    std::string name;
    std::string code;
    std::optional<int> level;
    std::optional<int> id;
};

// The reference program itself failed (not the candidate): a usage problem for one check, a
// load_error verdict in a batch run.
class ReferenceError : public UsageError {
    using UsageError::UsageError;
};

// The problem does not fit on the device (or within --device-memory): its candidates get a
// load_error that says what it needs and what the device has, never retried. `plan` says why.
class ProblemTooLarge : public ReferenceError {
  public:
    // first_call_failed: the reference's first call ran out of memory (its need is a bound).
    ProblemTooLarge(const MemoryPlan& plan, const std::string& device, bool first_call_failed)
        : ReferenceError(
              "the problem does not fit on " + device + ": " +
                  (first_call_failed ? "the reference's first call ran out of memory; " : "") +
                  "it " + plan.needs_text(first_call_failed),
              "evaluate it on a GPU with more memory (or with a larger "
              "--device-memory, where it is set)"),
          plan_(plan) {}
    const MemoryPlan& plan() const { return plan_; }

  private:
    MemoryPlan plan_;
};

struct EvaluatorOptions {
    CheckConfig config;
    WorkerEnvironment env;                         // the device this evaluator owns
    SandboxPolicy policy;                          // how sandboxes are confined
    fs::path scratch_dir;                          // sandboxes' private folders
    std::function<void(const std::string&)> log;   // progress lines; may be empty
    bool verbose = false;                          // a line per phase, too
    bool reference_failures_are_verdicts = false;  // else ReferenceError propagates
    std::optional<fs::path> gpu_peaks;             // the user's GPU table, ahead of kbench's
    // The core both sandboxes are pinned to while a candidate is timed (-1: none;
    // EvalEngine gives each GPU one, devices.hpp timing_cores).
    int timing_core = -1;
};

// A verdict with the problem, candidate and configuration filled in and nothing decided yet.
Verdict make_verdict(const CheckConfig& config, const ProblemSpec& problem,
                     const CandidateSpec& candidate, const std::string& device_name);

// Evaluates candidates on one device: a judge and a zygote that live as long as this object,
// one sandbox per candidate, builds from a shared builder pool. After the build, each evaluation
// is the pipeline of phases in phases.hpp.
class Evaluator {
  public:
    Evaluator(EvaluatorOptions options, BuilderPool& builds);
    ~Evaluator();

    // One verdict. A harness failure (a worker died or broke the protocol) is retried once with
    // fresh workers, and a verdict reached then says it happened; twice is infra_error. Throws
    // InfraError when the workers cannot be restarted, and ReferenceError when the reference
    // fails (unless reference_failures_are_verdicts).
    //
    // `upcoming`, where given, names the candidate this device evaluates next (taking it from
    // the caller's queue), asked once the candidate's own process has ended: that candidate's
    // sandbox is then started (CUDA's start included) while this one's evaluation ends, and
    // used by the next evaluate() of the same candidate.
    using Upcoming = std::function<std::optional<CandidateSpec>()>;
    Verdict evaluate(const ProblemSpec& problem, const CandidateSpec& candidate,
                     const Upcoming& upcoming = {});

    // The problem's reference at its working precision against the same reference at the
    // arbiter's (kbench dataset audit). Throws ReferenceError when the reference fails.
    protocol::Audited audit(const ProblemSpec& problem, int trials);

    // The problem's reference timed alone (kbench baseline), eager or compiled, in a judge
    // started for it (nothing of an earlier problem's compiled graphs or allocations stays).
    // With turns, other judges share the device: they may start, prepare and compile beside
    // this one (max-autotune's compile excepted), never while it times. Throws ReferenceError
    // when the reference fails, InfraError when the judge does.
    protocol::BaselineTimed baseline(const ProblemSpec& problem,
                                     const protocol::BaselineRequest& request, double limit_s,
                                     DeviceTurns* turns = nullptr);

    // The memory plan of the last problem prepared (on a CPU, from the sizes alone: no
    // allocator's peak is measured there).
    const std::optional<MemoryPlan>& memory_plan() const { return plan_; }

    // The judge's hello: device, torch, CUDA and Python versions.
    const json& judge_hello() const { return judge_hello_; }

    const json& device_info() const { return device_info_; }
    // The judge's and the zygote's process ids (the roots of every sandbox's ancestry).
    std::vector<pid_t> worker_pids() const;
    std::string device_name() const;

  private:
    void start_workers();
    WorkerProcess& running(std::unique_ptr<WorkerProcess>& worker, const std::string& role);
    WorkerProcess& judge();
    WorkerProcess& zygote();
    // A candidate's folder with its files and modules in place, and its sandbox started.
    struct Staged {
        std::string key;  // the candidate's build key and file name
        fs::path scratch;
        fs::path file;
        integrity::KernelOrigins origins;  // which kernels are the candidate's
        std::unique_ptr<SandboxProcess> sandbox;
        double start_s = 0;
        bool early = false;  // started beside the end of the candidate before it
    };
    Verdict evaluate_once(const ProblemSpec& problem, const CandidateSpec& candidate,
                          const Upcoming& upcoming);
    void prepare(const ProblemSpec& problem);
    // The problem's memory plan on this device (after prepare); throws ProblemTooLarge when it
    // does not fit.
    void plan_memory_for(const protocol::ProblemPrepared& prepared);
    std::unique_ptr<Staged> stage(const CandidateSpec& candidate);
    std::string staged_key(const CandidateSpec& candidate);
    static std::string staged_key(const std::string& build_key, const CandidateSpec& candidate);
    // The upcoming candidate's sandbox, started now where it will need one.
    void stage_upcoming(const Upcoming& upcoming);
    void drop_spare();
    void run_phases(const ProblemSpec& problem, const CandidateSpec& candidate, Verdict& v,
                    const Upcoming& upcoming);
    void check_judge_health();
    void note(const std::string& line);
    void detail(const std::string& line);
    Verdict blank_verdict(const ProblemSpec& problem, const CandidateSpec& candidate);

    EvaluatorOptions options_;
    BuilderPool& builds_;
    std::unique_ptr<WorkerProcess> judge_;
    std::unique_ptr<WorkerProcess> zygote_;
    int sandbox_count_ = 0;
    json device_info_;
    json judge_hello_;
    json precision_state_;            // the judge's precision flags, once it has prepared a problem
    std::optional<MemoryPlan> plan_;  // the last prepared problem's, on a GPU
    // The configuration its candidates are evaluated under: the run's, with rounds off where
    // only the plan without them fits the device (MemoryPlan::rounds_dropped).
    CheckConfig problem_config_;
    json gpu_entry_;  // this device's peak rates (integrity/floor.hpp), or null
    // The next candidate's sandbox, started early (stage_upcoming); forked by zygote_, so it
    // goes before the zygote does.
    std::unique_ptr<Staged> spare_;
};

}  // namespace kbench::orchestrator
