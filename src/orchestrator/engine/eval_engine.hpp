#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/config.hpp"
#include "core/verdict.hpp"
#include "dataset/problem.hpp"
#include "orchestrator/builds/builder_pool.hpp"
#include "orchestrator/engine/evaluator.hpp"
#include "orchestrator/workers/worker_process.hpp"

namespace kbench::orchestrator {

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
// Under KernelBench's mode the candidate's module starts with the reference's program, as
// KernelBench runs both in one namespace (a candidate may use its Model or its constants).
CandidateSpec candidate_spec(const EvalItem& item, Mode protocol = Mode::strict);

// The key a verdict of this problem, candidate, backend and configuration is stored under.
std::string item_key(const dataset::Problem& problem, const dataset::Candidate& candidate,
                     Backend backend, const CheckConfig& config);

// Items that come while the engine runs (a refinement: each verdict may bring the next turn's
// candidate). next() waits for one; it returns nothing once the feed is closed and empty, or
// kbench is interrupted.
class ItemFeed {
  public:
    void push(EvalItem item);
    void give_back(EvalItem item);  // a lost device's item, first in line again
    void close();
    std::optional<EvalItem> next();
    bool has_items();
    bool closed();
    // Called with every item pushed from now on, and at once with those waiting.
    void on_push(std::function<void(const EvalItem&)> listener);

  private:
    std::mutex mutex_;
    std::function<void(const EvalItem&)> listener_;
    std::condition_variable changed_;
    std::deque<EvalItem> items_;
    bool closed_ = false;
};

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
    // Starts the builders and a judge a device. On GPUs whose architecture the CUDA driver
    // names, returns once the builders are up and the judges start on (run waits for them);
    // otherwise once the judges are up too. Throws InfraError, here or in run, when no device
    // can start a judge.
    explicit EvalEngine(EngineOptions options);
    ~EvalEngine();

    using VerdictSink =
        std::function<void(const EvalItem&, const Verdict&, const std::string& device)>;
    using StartHook = std::function<void(const EvalItem&)>;
    // Calls sink once per item as verdicts come (one call at a time), and on_start (if given)
    // as each item's evaluation begins. Throws InfraError when no device is left working.
    // Once kbench is interrupted (orchestrator/run/interruption.hpp) it starts nothing more and
    // returns.
    void run(const std::vector<EvalItem>& items, const VerdictSink& sink,
             const StartHook& on_start = {});

    // The same for items as they come: each device takes the next item of the feed; on GPUs
    // each item is built as soon as it comes. Returns when the feed is closed and empty.
    void run(ItemFeed& feed, const VerdictSink& sink, const StartHook& on_start = {});

    std::size_t devices() const { return devices_.size(); }

  private:
    // Evaluates one item on device d; false when the device is lost (the item is not done).
    bool evaluate(std::size_t d, const EvalItem& item, const CandidateSpec& spec,
                  const VerdictSink& sink, std::mutex& sink_mutex,
                  const Evaluator::Upcoming& upcoming = {});
    void check_devices_left() const;
    // Waits for the judges' start (once): names the devices that failed, throws InfraError when
    // none works or a judge's GPU is not the architecture the driver named for it.
    void devices_started();

    EngineOptions options_;
    std::vector<std::string> devices_;
    std::unique_ptr<BuilderPool> builds_;
    std::vector<std::unique_ptr<Evaluator>> evaluators_;
    std::vector<std::string> failures_;
    std::vector<std::thread> starts_;  // the judges' starts, joined by devices_started
    std::vector<std::string> probed_;  // the driver's capability a device, when it said
    std::mutex start_mutex_;
    bool started_ = false;
    bool first_run_ = false;      // run() has split a CPU run once (the first problem first)
    std::vector<int> own_cores_;  // kbench's own cores before it left the timing cores
};

}  // namespace kbench::orchestrator
