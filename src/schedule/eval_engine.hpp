#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "core/verdict.hpp"
#include "dataset/problem.hpp"
#include "schedule/builder_pool.hpp"
#include "schedule/evaluator.hpp"
#include "schedule/worker_process.hpp"

namespace kbench::schedule {

// One evaluation to do: a candidate for a problem, under the run's configuration.
struct EvalItem {
    dataset::Problem problem;
    dataset::Candidate candidate;
    Backend backend = Backend::cuda;
    std::string key;         // what the verdict is stored under
    bool unsampled = false;  // a lone candidate (kbench check): its verdict has no sample id
};

// What the evaluator needs of an item's problem and candidate.
ProblemSpec problem_spec(const dataset::Problem& problem);
CandidateSpec candidate_spec(const EvalItem& item);

// The key a verdict of this problem, candidate, backend and configuration is stored under.
std::string item_key(const dataset::Problem& problem, const dataset::Candidate& candidate,
                     Backend backend, const CheckConfig& config);

struct EngineOptions {
    CheckConfig config;
    WorkerEnvironment env;          // python, worker module, logs; device_kind "cpu" or "cuda"
    SandboxPolicy policy;           // how sandboxes are confined
    std::vector<std::string> gpus;  // physical GPU ids, a judge each; ignored on the CPU
    int cpu_judges = 1;             // on the CPU: judges, each on its own share of the cores
    BuilderOptions builds;
    fs::path scratch_dir;
    std::function<void(const std::string&)> log;
    bool verbose = false;
    std::optional<fs::path> gpu_peaks;  // the user's GPU table
};

// Evaluates many candidates on every device given: a judge and a zygote per device, a shared
// builder pool compiling ahead, candidates of one problem kept on one device where possible so
// that its judge reuses the reference outputs. Started once (workers import torch); run may be
// called several times on the same workers.
class EvalEngine {
  public:
    // Starts the builders and a judge a device. Throws InfraError when no device can start one.
    explicit EvalEngine(EngineOptions options);
    ~EvalEngine();

    using VerdictSink =
        std::function<void(const EvalItem&, const Verdict&, const std::string& device)>;
    using StartHook = std::function<void(const EvalItem&)>;
    // Calls sink once per item as verdicts come (one call at a time), and on_start (if given)
    // as each item's evaluation begins. Throws InfraError when no device is left working.
    // Once kbench is interrupted (schedule/interruption.hpp) it starts nothing more and returns.
    void run(const std::vector<EvalItem>& items, const VerdictSink& sink,
             const StartHook& on_start = {});

    std::size_t devices() const { return devices_.size(); }

  private:
    EngineOptions options_;
    std::vector<std::string> devices_;
    std::unique_ptr<BuilderPool> builds_;
    std::vector<std::unique_ptr<Evaluator>> evaluators_;
    std::vector<std::string> failures_;
};

}  // namespace kbench::schedule
