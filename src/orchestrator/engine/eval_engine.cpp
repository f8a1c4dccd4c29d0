#include "orchestrator/engine/eval_engine.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <memory>
#include <mutex>
#include <semaphore>
#include <thread>
#include <utility>

#include <unistd.h>

#include "core/error.hpp"
#include "core/sha256.hpp"
#include "orchestrator/devices/devices.hpp"
#include "orchestrator/engine/evaluator.hpp"
#include "orchestrator/engine/text.hpp"
#include "orchestrator/engine/work_queue.hpp"
#include "orchestrator/run/interruption.hpp"
#include "process/process.hpp"
#include "process/process_tree.hpp"

namespace kbench::orchestrator {

ProblemSpec problem_spec(const dataset::Problem& p) {
    // Level and id 0: a reference file whose name does not say them (kbench check).
    return {p.name, p.code, p.level ? std::optional<int>(p.level) : std::nullopt,
            p.id ? std::optional<int>(p.id) : std::nullopt};
}

CandidateSpec candidate_spec(const EvalItem& item, Mode protocol) {
    const auto& c = item.candidate;
    fs::path path = c.source;
    // A row of a JSON-lines file has no file name: use KernelBench's run layout name.
    if (path.extension() != ".py")
        path = "level_" + std::to_string(c.level) + "_problem_" + std::to_string(c.problem_id) +
               "_sample_" + std::to_string(c.sample_id) + "_kernel.py";
    CandidateSpec spec{path, c.code, item.backend, c.sample_id};
    if (item.unsampled) spec.sample_id.reset();
    if (protocol == Mode::kernelbench) spec.preamble = item.problem.code;
    return spec;
}

std::string item_key(const dataset::Problem& problem, const dataset::Candidate& candidate,
                     Backend backend, const CheckConfig& config) {
    return sha256_hex(problem.sha256 + "/" + candidate.sha256 + "/" + config.store_key() + "/" +
                      std::string(to_string(backend)));
}

EvalEngine::EvalEngine(EngineOptions options) : options_(std::move(options)) {
    const bool cpu = options_.env.device_kind == DeviceKind::cpu;
    devices_ = cpu ? std::vector<std::string>{"cpu"} : options_.gpus;
    std::vector<std::vector<int>> cores;  // each CPU judge's share, when there are several
    if (cpu && options_.cpu_judges > 1) {
        cores = split_cores(usable_cores(), options_.cpu_judges);
        devices_.clear();
        for (std::size_t j = 0; j < cores.size(); ++j)
            devices_.push_back("cpu:" + std::to_string(j));
    }
    if (devices_.empty()) throw UsageError("no GPU to run on", "pass --gpus, or --device cpu");
    // On GPUs each device's timing gets a core of its own, which builders leave alone.
    TimingCores timing;
    if (!cpu) timing = timing_cores(usable_cores(), devices_.size());
    if (!timing.builders.empty()) {
        options_.builds.env.cpu_cores = timing.builders;
        // kbench's own threads (the engine's, the builders' and judges' clients, the status
        // line's) wake at normal priority too: off the timing cores, where a core that runs only
        // a candidate under SCHED_IDLE looks idle to the scheduler placing a woken thread.
        own_cores_ = usable_cores();
        sandbox::place_threads(::getpid(), timing.builders);
    }

    // The builder pool and one evaluator a device start together: each imports torch.
    builds_ = std::make_unique<BuilderPool>(options_.builds);
    evaluators_.resize(devices_.size());
    failures_.resize(devices_.size());
    for (std::size_t d = 0; d < devices_.size(); ++d)
        starts_.emplace_back([this, d, cpu, share = cores.empty() ? std::vector<int>() : cores[d],
                              timing_core = timing.timing.empty() ? -1 : timing.timing[d],
                              builder_cores = timing.builders] {
            EvaluatorOptions e;
            e.config = options_.config;
            // Verdicts name the physical GPU that produced them (the workers see it as cuda:0),
            // or the CPU judge.
            e.config.device = cpu ? devices_[d] : "cuda:" + devices_[d];
            e.env = options_.env;
            e.policy = options_.policy;
            if (!share.empty()) e.env.cpu_cores = share;
            // Judges, zygotes and the sandboxes they fork run off the timing cores until a
            // sandbox is pinned to its device's for the timing: nothing of another device's, at
            // normal priority, takes it from a candidate under SCHED_IDLE there.
            if (share.empty() && timing_core >= 0) e.env.cpu_cores = builder_cores;
            if (!cpu) e.env.visible_gpu = devices_[d];
            e.env.log_dir = options_.env.log_dir / ("device-" + devices_[d]);
            e.scratch_dir = options_.scratch_dir / ("device-" + devices_[d]);
            e.log = options_.log;
            e.verbose = options_.verbose;
            e.reference_failures_are_verdicts = true;
            e.gpu_peaks = options_.gpu_peaks;
            e.timing_core = timing_core;
            try {
                evaluators_[d] = std::make_unique<Evaluator>(e, *builds_);
            } catch (const std::exception& error) {
                failures_[d] = error.what();
            }
        });
    try {
        // On GPUs the driver names the architectures to build for in a fraction of a second,
        // while the judges take seconds to import torch and start CUDA: builds need not wait
        // for them. The judges' own answer is checked against it when they are up.
        auto began = std::chrono::steady_clock::now();
        auto since = [&] { return seconds_text(seconds_since(began)); };
        bool say = options_.log && options_.verbose;
        if (!cpu) {
            std::string why;
            probed_ = gpu_capabilities(
                options_.env.python,
                options_.env.worker_package_dir / "kbench_worker" / "gpu_probe.py", devices_, why);
            if (say && probed_.empty())
                options_.log("builds wait for the judges to name the GPUs' architectures (" + why +
                             ")");
            else if (say) {
                std::string list;
                for (const auto& c : probed_) list += (list.empty() ? "" : ", ") + c;
                options_.log("the CUDA driver named the GPUs' architectures in " + since() + ": " +
                             list);
            }
        }
        builds_->wait_ready();
        if (say) options_.log("builders ready in " + since());
    } catch (...) {
        for (auto& t : starts_) t.join();
        throw;
    }
    if (!probed_.empty())
        builds_->set_cuda_architectures(probed_);
    else
        devices_started();
}

void EvalEngine::devices_started() {
    std::lock_guard<std::mutex> guard(start_mutex_);
    if (started_) return;
    for (auto& t : starts_) t.join();
    starts_.clear();
    std::vector<std::string> capabilities;
    std::size_t working = 0;
    for (std::size_t d = 0; d < devices_.size(); ++d) {
        if (!evaluators_[d]) {
            if (options_.log)
                options_.log("device " + devices_[d] + " is not usable: " + failures_[d]);
            continue;
        }
        ++working;
        std::string capability = evaluators_[d]->device_info().value("capability", std::string());
        // Builds made for what the driver said must be for the GPU the judge sees.
        if (!probed_.empty() && capability != probed_[d])
            throw InfraError("the CUDA driver named GPU " + devices_[d] + "'s architecture " +
                                 probed_[d] + ", its judge's PyTorch " + capability,
                             "check CUDA_VISIBLE_DEVICES and CUDA_DEVICE_ORDER, which both read");
        capabilities.push_back(capability);
    }
    if (working == 0)
        throw InfraError("no device could start a judge: " + failures_.front(),
                         options_.env.device_kind == DeviceKind::cpu
                             ? "check that this Python imports torch (the worker logs under the "
                               "run's folder say more)"
                             : "check the GPUs with nvidia-smi and that this Python's PyTorch "
                               "sees them (torch.cuda.is_available()), or run with --device cpu");
    if (probed_.empty()) builds_->set_cuda_architectures(capabilities);
    started_ = true;
}

EvalEngine::~EvalEngine() {
    for (auto& t : starts_)
        if (t.joinable()) t.join();
    evaluators_.clear();  // before the builder pool they refer to
    if (!own_cores_.empty()) sandbox::place_threads(::getpid(), own_cores_);
}

namespace {

// The first failure of kbench's own in one of run()'s threads (a store or a folder it cannot
// write, say): every thread stops after the item it has, and run() throws it once all have, so
// that no exception ends the process from a thread and every verdict before it is kept.
class FirstFailure {
  public:
    template <typename Body>
    void guard(Body&& body) {
        try {
            body();
        } catch (...) {
            std::lock_guard<std::mutex> hold(mutex_);
            if (!error_) error_ = std::current_exception();
            failed_ = true;
        }
    }
    bool failed() const { return failed_; }
    void rethrow() const {
        if (error_) std::rethrow_exception(error_);
    }

  private:
    std::mutex mutex_;
    std::exception_ptr error_;
    std::atomic<bool> failed_ = false;
};

}  // namespace

void EvalEngine::run(const std::vector<EvalItem>& items, const VerdictSink& sink,
                     const StartHook& on_start) {
    if (items.empty() || InterruptGuard::interrupted()) return;
    const bool cpu = options_.env.device_kind == DeviceKind::cpu;
    // On a CPU every build ends before any timing starts; the first problem's candidates are
    // built and evaluated first, so that the first verdict comes after one build (the suite's
    // first one: 23 s from start on 2 cores) rather than after all of them (72 s of builds for
    // the suite's 13), for about one build's time on one core more in all.
    if (cpu && !first_run_) {
        first_run_ = true;
        std::vector<EvalItem> first, rest;
        const auto& lead = items.front().problem;
        for (const auto& item : items)
            (item.problem.level == lead.level && item.problem.id == lead.id ? first : rest)
                .push_back(item);
        if (!rest.empty()) {
            run(first, sink, on_start);
            run(rest, sink, on_start);
            return;
        }
    }
    std::vector<CandidateSpec> specs;
    for (const auto& item : items) specs.push_back(candidate_spec(item, options_.config.mode));
    // On a CPU, builds would disturb timings: finish them first. On GPUs, build while evaluating.
    std::thread prebuild;
    std::atomic<bool> prebuilding = !cpu;
    FirstFailure failure;
    if (cpu)
        builds_->prebuild(specs);
    else
        prebuild = std::thread([&] {
            failure.guard([&] { builds_->prebuild(specs); });
            prebuilding = false;
        });
    try {
        devices_started();
    } catch (...) {
        builds_->stop_prebuilding(true);
        if (prebuild.joinable()) prebuild.join();
        throw;
    }
    // On GPUs, candidates whose builds are done go first: a device waiting for one compiler
    // while another candidate is built idles for nothing.
    WorkQueue::Ready ready;
    if (!cpu) ready = [&](std::size_t i) { return builds_->ready(specs[i]); };

    std::vector<std::string> problems;
    for (const auto& item : items) problems.push_back(item.problem.sha256);
    WorkQueue queue(std::move(problems), devices_.size());
    std::mutex sink_mutex;
    std::vector<std::thread> workers;
    for (std::size_t d = 0; d < devices_.size(); ++d) {
        if (!evaluators_[d]) continue;
        workers.emplace_back([&, d] {
            failure.guard([&] {
                // The device's next item is taken from the queue once the candidate before it has
                // ended (a ready one only; on a CPU every build is done by then), so that its
                // sandbox starts beside the end of that evaluation.
                std::optional<std::size_t> taken;
                Evaluator::Upcoming upcoming = [&]() -> std::optional<CandidateSpec> {
                    if (taken || InterruptGuard::interrupted() || failure.failed())
                        return std::nullopt;
                    taken = queue.next_ready(
                        d, ready ? ready : [](std::size_t) { return true; });
                    if (!taken) return std::nullopt;
                    return specs[*taken];
                };
                while (!InterruptGuard::interrupted() && !failure.failed()) {
                    std::optional<std::size_t> index = std::exchange(taken, std::nullopt);
                    if (!index) {
                        while (ready && prebuilding && !InterruptGuard::interrupted() &&
                               queue.pending() > 0 && !queue.any_ready(ready))
                            std::this_thread::sleep_for(std::chrono::milliseconds(50));
                        index = queue.next(d, ready);
                    }
                    if (!index) return;
                    const EvalItem& item = items[*index];
                    if (on_start) {
                        std::lock_guard<std::mutex> guard(sink_mutex);
                        on_start(item);
                    }
                    if (!evaluate(d, item, specs[*index], sink, sink_mutex, upcoming)) {
                        if (InterruptGuard::interrupted()) return;
                        // This device is lost: its items go to the others.
                        if (taken) queue.give_back(d, *std::exchange(taken, std::nullopt));
                        queue.give_back(d, *index);
                        return;
                    }
                }
            });
        });
    }
    for (auto& t : workers) t.join();
    if (failure.failed()) builds_->stop_prebuilding(true);
    if (prebuild.joinable()) prebuild.join();
    failure.rethrow();
    if (InterruptGuard::interrupted()) return;
    check_devices_left();
}

void EvalEngine::check_devices_left() const {
    bool all_lost = true;
    for (const auto& e : evaluators_) all_lost = all_lost && !e;
    if (all_lost)
        throw InfraError("every device stopped before the run finished: " + failures_.front(),
                         "check the devices (nvidia-smi) and run the same command again: "
                         "finished verdicts are kept");
}

bool EvalEngine::evaluate(std::size_t d, const EvalItem& item, const CandidateSpec& spec,
                          const VerdictSink& sink, std::mutex& sink_mutex,
                          const Evaluator::Upcoming& upcoming) {
    Verdict verdict;
    double began_s = InterruptGuard::now_s();
    try {
        verdict = evaluators_[d]->evaluate(problem_spec(item.problem), spec, upcoming);
    } catch (const InfraError& e) {
        if (InterruptGuard::interrupted()) return false;
        // This device is lost; another may finish its work.
        if (options_.log) options_.log("device " + devices_[d] + " stops: " + e.what());
        failures_[d] = e.what();
        evaluators_[d].reset();
        return false;
    }
    if (InterruptGuard::interrupted()) return false;  // its workers were killed under it
    // A signal to kbench itself from this device's sandboxes: the candidate's attack.
    auto hostile = InterruptGuard::take_hostile(evaluators_[d]->worker_pids(), began_s);
    if (!hostile.empty()) {
        std::string what = "the candidate's processes sent " +
                           sandbox::describe_signal(hostile.front().signal) +
                           " to kbench itself (pid " + std::to_string(hostile.front().sender) + ")";
        verdict.integrity.push_back({"signalled_kbench", Severity::reject, what});
        decide(verdict, Decision::rejected("signalled_kbench", what));
    }
    std::lock_guard<std::mutex> guard(sink_mutex);
    sink(item, verdict, devices_[d]);
    return true;
}

void ItemFeed::push(EvalItem item) {
    {
        std::lock_guard<std::mutex> guard(mutex_);
        if (listener_) listener_(item);
        items_.push_back(std::move(item));
    }
    changed_.notify_all();
}

void ItemFeed::on_push(std::function<void(const EvalItem&)> listener) {
    std::lock_guard<std::mutex> guard(mutex_);
    listener_ = std::move(listener);
    if (listener_)
        for (const auto& item : items_) listener_(item);
}

void ItemFeed::give_back(EvalItem item) {
    {
        std::lock_guard<std::mutex> guard(mutex_);
        items_.push_front(std::move(item));
    }
    changed_.notify_all();
}

void ItemFeed::close() {
    {
        std::lock_guard<std::mutex> guard(mutex_);
        closed_ = true;
    }
    changed_.notify_all();
}

bool ItemFeed::has_items() {
    std::lock_guard<std::mutex> guard(mutex_);
    return !items_.empty();
}

bool ItemFeed::closed() {
    std::lock_guard<std::mutex> guard(mutex_);
    return closed_;
}

std::optional<EvalItem> ItemFeed::next() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (items_.empty() && !closed_ && !InterruptGuard::interrupted())
        changed_.wait_for(lock, std::chrono::milliseconds(100));
    if (items_.empty() || InterruptGuard::interrupted()) return std::nullopt;
    EvalItem item = std::move(items_.front());
    items_.pop_front();
    return item;
}

void EvalEngine::run(ItemFeed& feed, const VerdictSink& sink, const StartHook& on_start) {
    const bool cpu = options_.env.device_kind == DeviceKind::cpu;
    std::mutex sink_mutex;
    std::mutex builds_mutex;
    // On GPUs, one a candidate as it comes, with whether it is done: those done are joined as the
    // next comes (a server's feed runs for weeks).
    std::vector<std::pair<std::thread, std::shared_ptr<std::atomic<bool>>>> builds;
    // On GPUs each candidate builds as soon as it comes, while devices evaluate others (the
    // pool bounds how many build at once). On a CPU builds would disturb timings: each is
    // built when its evaluation begins.
    std::counting_semaphore<1024> building(std::clamp(builds_->width(), 1, 1024));
    FirstFailure failure;
    if (!cpu)
        feed.on_push([&](const EvalItem& item) {
            std::lock_guard<std::mutex> guard(builds_mutex);
            std::erase_if(builds, [](auto& b) {
                if (!b.second->load()) return false;
                b.first.join();
                return true;
            });
            auto done = std::make_shared<std::atomic<bool>>(false);
            std::thread build([this, &building, &failure, done,
                               spec = candidate_spec(item, options_.config.mode)] {
                building.acquire();
                failure.guard([&] { builds_->prebuild({spec}); });
                building.release();
                done->store(true);
            });
            builds.emplace_back(std::move(build), done);
        });
    try {
        devices_started();
    } catch (...) {
        feed.on_push({});
        builds_->stop_prebuilding(true);
        std::lock_guard<std::mutex> guard(builds_mutex);
        for (auto& b : builds) b.first.join();
        throw;
    }
    std::vector<std::thread> workers;
    for (std::size_t d = 0; d < devices_.size(); ++d) {
        if (!evaluators_[d]) continue;
        workers.emplace_back([&, d] {
            failure.guard([&] {
                while (!InterruptGuard::interrupted() && !failure.failed()) {
                    auto item = feed.next();
                    if (!item) return;
                    if (failure.failed()) {
                        feed.give_back(std::move(*item));
                        return;
                    }
                    CandidateSpec spec = candidate_spec(*item, options_.config.mode);
                    if (on_start) {
                        std::lock_guard<std::mutex> guard(sink_mutex);
                        on_start(*item);
                    }
                    if (!evaluate(d, *item, spec, sink, sink_mutex)) {
                        if (!InterruptGuard::interrupted()) feed.give_back(std::move(*item));
                        return;
                    }
                }
            });
            // The others waiting for items end too.
            if (failure.failed()) feed.close();
        });
    }
    for (auto& t : workers) t.join();
    feed.on_push({});
    std::lock_guard<std::mutex> guard(builds_mutex);
    for (auto& b : builds) b.first.join();
    failure.rethrow();
    if (InterruptGuard::interrupted()) return;
    check_devices_left();
}

}  // namespace kbench::orchestrator
