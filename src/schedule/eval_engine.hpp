#pragma once

#include <functional>
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
    std::string key;  // what the verdict is stored under
};

// What the evaluator needs of an item's problem and candidate.
ProblemSpec problem_spec(const dataset::Problem& problem);
CandidateSpec candidate_spec(const EvalItem& item);

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
// that its judge reuses the reference outputs.
class EvalEngine {
  public:
    explicit EvalEngine(EngineOptions options);

    using VerdictSink =
        std::function<void(const EvalItem&, const Verdict&, const std::string& device)>;
    using StartHook = std::function<void(const EvalItem&)>;
    // Calls sink once per item as verdicts come (one call at a time), and on_start (if given)
    // as each item's evaluation begins. Throws InfraError when no device is left working.
    void run(const std::vector<EvalItem>& items, const VerdictSink& sink,
             const StartHook& on_start = {});

  private:
    EngineOptions options_;
};

}  // namespace kbench::schedule
