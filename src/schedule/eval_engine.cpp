#include "schedule/eval_engine.hpp"

#include <memory>
#include <mutex>
#include <thread>

#include "core/error.hpp"
#include "schedule/devices.hpp"
#include "schedule/evaluator.hpp"
#include "schedule/work_queue.hpp"

namespace kbench::schedule {

ProblemSpec problem_spec(const dataset::Problem& p) {
    return {p.name, p.code, p.level, p.id};
}

CandidateSpec candidate_spec(const EvalItem& item) {
    const auto& c = item.candidate;
    fs::path path = c.source;
    // A row of a JSON-lines file has no file name: use KernelBench's run layout name.
    if (path.extension() != ".py")
        path = "level_" + std::to_string(c.level) + "_problem_" + std::to_string(c.problem_id) +
               "_sample_" + std::to_string(c.sample_id) + "_kernel.py";
    return {path, c.code, item.backend, c.sample_id};
}

EvalEngine::EvalEngine(EngineOptions options) : options_(std::move(options)) {}

void EvalEngine::run(const std::vector<EvalItem>& items, const VerdictSink& sink,
                     const StartHook& on_start) {
    if (items.empty()) return;
    const bool cpu = options_.env.device_kind == "cpu";
    std::vector<std::string> devices = cpu ? std::vector<std::string>{"cpu"} : options_.gpus;
    std::vector<std::vector<int>> cores;  // each CPU judge's share, when there are several
    if (cpu && options_.cpu_judges > 1) {
        cores = split_cores(usable_cores(), options_.cpu_judges);
        devices.clear();
        for (std::size_t j = 0; j < cores.size(); ++j)
            devices.push_back("cpu:" + std::to_string(j));
    }
    if (devices.empty()) throw UsageError("no GPU to run on", "pass --gpus, or --device cpu");

    // The builder pool and one evaluator a device start together: each imports torch.
    BuilderPool builds(options_.builds);
    std::vector<std::unique_ptr<Evaluator>> evaluators(devices.size());
    std::vector<std::string> failures(devices.size());
    std::vector<std::thread> starts;
    for (std::size_t d = 0; d < devices.size(); ++d)
        starts.emplace_back([&, d] {
            EvaluatorOptions e;
            e.config = options_.config;
            // Verdicts name the physical GPU that produced them (the workers see it as cuda:0),
            // or the CPU judge.
            e.config.device = cpu ? devices[d] : "cuda:" + devices[d];
            e.env = options_.env;
            e.policy = options_.policy;
            if (!cores.empty()) e.env.cpu_cores = cores[d];
            if (!cpu) e.env.visible_gpu = devices[d];
            e.env.log_dir = options_.env.log_dir / ("device-" + devices[d]);
            e.scratch_dir = options_.scratch_dir / ("device-" + devices[d]);
            e.log = options_.log;
            e.verbose = options_.verbose;
            e.reference_failures_are_verdicts = true;
            e.gpu_peaks = options_.gpu_peaks;
            try {
                evaluators[d] = std::make_unique<Evaluator>(e, builds);
            } catch (const std::exception& error) {
                failures[d] = error.what();
            }
        });
    for (auto& t : starts) t.join();
    builds.wait_ready();

    std::vector<std::string> capabilities;
    std::size_t working = 0;
    for (std::size_t d = 0; d < devices.size(); ++d) {
        if (!evaluators[d]) {
            if (options_.log)
                options_.log("device " + devices[d] + " is not usable: " + failures[d]);
            continue;
        }
        ++working;
        capabilities.push_back(evaluators[d]->device_info().value("capability", std::string()));
    }
    if (working == 0) throw InfraError("no device could start a judge: " + failures.front());
    builds.set_cuda_architectures(capabilities);

    std::vector<CandidateSpec> specs;
    for (const auto& item : items) specs.push_back(candidate_spec(item));
    // On a CPU, builds would disturb timings: finish them first. On GPUs, build while evaluating.
    std::thread prebuild;
    if (cpu)
        builds.prebuild(specs);
    else
        prebuild = std::thread([&] { builds.prebuild(specs); });

    std::vector<std::string> problems;
    for (const auto& item : items) problems.push_back(item.problem.sha256);
    WorkQueue queue(std::move(problems), devices.size());
    std::mutex sink_mutex;
    std::vector<std::thread> workers;
    for (std::size_t d = 0; d < devices.size(); ++d) {
        if (!evaluators[d]) continue;
        workers.emplace_back([&, d] {
            while (auto index = queue.next(d)) {
                const EvalItem& item = items[*index];
                if (on_start) {
                    std::lock_guard<std::mutex> guard(sink_mutex);
                    on_start(item);
                }
                Verdict verdict;
                try {
                    verdict = evaluators[d]->evaluate(problem_spec(item.problem), specs[*index]);
                } catch (const InfraError& e) {
                    // This device is lost; another may finish its work.
                    queue.give_back(d, *index);
                    if (options_.log) options_.log("device " + devices[d] + " stops: " + e.what());
                    failures[d] = e.what();
                    evaluators[d].reset();
                    return;
                }
                std::lock_guard<std::mutex> guard(sink_mutex);
                sink(item, verdict, devices[d]);
            }
        });
    }
    for (auto& t : workers) t.join();
    if (prebuild.joinable()) prebuild.join();
    bool all_lost = true;
    for (const auto& e : evaluators) all_lost = all_lost && !e;
    if (all_lost)
        throw InfraError("every device stopped before the run finished: " + failures.front(),
                         "check the devices (nvidia-smi) and run the same command again: "
                         "finished verdicts are kept");
}

}  // namespace kbench::schedule
