#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "core/config.hpp"
#include "core/error.hpp"
#include "core/verdict.hpp"
#include "schedule/builder_pool.hpp"
#include "schedule/sandbox_process.hpp"
#include "schedule/worker_process.hpp"

namespace kbench::schedule {

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

struct EvaluatorOptions {
    CheckConfig config;
    WorkerEnvironment env;                         // the device this evaluator owns
    fs::path scratch_dir;                          // sandboxes' private folders
    std::function<void(const std::string&)> log;   // progress lines; may be empty
    bool verbose = false;                          // a line per phase, too
    bool reference_failures_are_verdicts = false;  // else ReferenceError propagates
};

// A verdict with the problem, candidate and configuration filled in and nothing decided yet.
Verdict make_verdict(const CheckConfig& config, const ProblemSpec& problem,
                     const CandidateSpec& candidate, const std::string& device_name);

// Evaluates candidates on one device: a judge and a zygote that live as long as this object,
// one sandbox per candidate, builds from a shared builder pool.
class Evaluator {
  public:
    Evaluator(EvaluatorOptions options, BuilderPool& builds);
    ~Evaluator();

    // One verdict; harness failures are retried once, then reported as infra_error. Throws
    // InfraError when the workers cannot be restarted, and UsageError when the reference fails.
    Verdict evaluate(const ProblemSpec& problem, const CandidateSpec& candidate);

    const json& device_info() const { return device_info_; }
    std::string device_name() const;

  private:
    void start_workers();
    // The worker, started again first if it has died.
    WorkerProcess& running(std::unique_ptr<WorkerProcess>& worker, const std::string& role);
    WorkerProcess& judge();
    WorkerProcess& zygote();
    Verdict evaluate_once(const ProblemSpec& problem, const CandidateSpec& candidate);
    void run_candidate(const ProblemSpec& problem, const CandidateSpec& candidate,
                       Verdict& verdict);
    bool check_correctness(SandboxProcess& sandbox, Verdict& verdict);
    void time_candidate(SandboxProcess& sandbox, Verdict& verdict);
    bool accept(const sandbox::Channel::Reply& reply, SandboxProcess& sandbox,
                const std::string& phase, double limit_s, Verdict& verdict);
    void check_judge_health();
    json judge_call(const json& request, double timeout_s);
    void note(const std::string& line);
    void detail(const std::string& line);
    Verdict blank_verdict(const ProblemSpec& problem, const CandidateSpec& candidate);
    bool last_call_passes(const json& stage, const json& report, Verdict& v);

    EvaluatorOptions options_;
    BuilderPool& builds_;
    std::unique_ptr<WorkerProcess> judge_;
    std::unique_ptr<WorkerProcess> zygote_;
    int sandbox_count_ = 0;
    json device_info_;
    std::size_t trial_bytes_ = 0;  // inputs and reference outputs of one correctness trial
    bool fresh_inputs_ = false;    // timed calls get inputs of their own (the prepared problem)
};

}  // namespace kbench::schedule
