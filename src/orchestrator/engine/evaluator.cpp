#include "orchestrator/engine/evaluator.hpp"

#include <mutex>
#include <optional>
#include <regex>
#include <set>

#include "core/error.hpp"
#include "core/sha256.hpp"
#include "integrity/floor.hpp"
#include "integrity/health.hpp"
#include "integrity/rules.hpp"
#include "integrity/static_review.hpp"
#include "orchestrator/engine/judge_client.hpp"
#include "orchestrator/engine/phases.hpp"
#include "orchestrator/engine/text.hpp"
#include "orchestrator/run/interruption.hpp"
#include "process/process_tree.hpp"
#include "protocol/judge_messages.hpp"

namespace kbench::orchestrator {
namespace {

using sandbox::Clock;

// How long a worker may take to import torch and initialise its device.
constexpr double kStartSeconds = 120;

// A layer a machine cannot provide is said once per run, not once per candidate.
// A line said once per run.
void say_once(const std::string& line, const std::function<void(const std::string&)>& log) {
    static std::mutex mutex;
    static std::set<std::string> said;
    std::lock_guard<std::mutex> guard(mutex);
    if (said.insert(line).second && log) log(line);
}

// A failure that may have reached past the sandbox's own device context: the judge checks the
// device before anything else starts on it.
bool needs_health_check(Status status) {
    return status == Status::runtime_error || status == Status::crash || status == Status::timeout;
}

void say_missing_layers_once(const sandbox::LayerReport& layers,
                             const std::function<void(const std::string&)>& log) {
    for (const auto& [layer, why] : layers.missing)
        say_once("sandbox layer " + layer + " is off: " + why + " (verdicts record it)", log);
}

// One line on why a reference cannot be loaded, naming the Hugging Face model when that is it.
std::string reference_failure_reason(const std::string& code, const std::string& error) {
    std::string last = error_line(error);
    static const std::regex model_name(R"(model_name\s*=\s*["']([^"']+)["'])");
    std::smatch m;
    bool hub = error.find("huggingface") != std::string::npos ||
               error.find("from_pretrained") != std::string::npos ||
               error.find("transformers") != std::string::npos;
    if (hub && std::regex_search(code, m, model_name))
        return "the reference needs the Hugging Face model '" + m[1].str() +
               "', which is not available offline (cache it, and install transformers): " + last;
    return "the reference could not be loaded: " + last;
}

}  // namespace

Evaluator::Evaluator(EvaluatorOptions options, BuilderPool& builds)
    : options_(std::move(options)), builds_(builds), problem_config_(options_.config) {
    fs::create_directories(options_.scratch_dir);
    start_workers();
}

Evaluator::~Evaluator() {
    drop_spare();
}

void Evaluator::drop_spare() {
    if (!spare_) return;
    fs::path scratch = spare_->scratch;
    spare_.reset();  // its sandbox's destructor kills it
    std::error_code ignored;
    fs::remove_all(scratch, ignored);
}

void Evaluator::note(const std::string& line) {
    if (options_.log) options_.log(line);
}

void Evaluator::detail(const std::string& line) {
    if (options_.verbose) note(line);
}

void Evaluator::start_workers() {
    drop_spare();
    judge_.reset();
    zygote_.reset();
    // Both import torch at once; the judge also initialises the device.
    judge_ = std::make_unique<WorkerProcess>(options_.env, "judge");
    zygote_ = std::make_unique<WorkerProcess>(options_.env, "zygote");
    judge_hello_ = judge_->hello(kStartSeconds);
    device_info_ = judge_hello_.at("device");
    zygote_->hello(kStartSeconds);
    integrity::GpuTable table;
    if (options_.gpu_peaks) table.add_file(*options_.gpu_peaks);
    gpu_entry_ =
        options_.env.device_kind == DeviceKind::cpu ? json(nullptr) : table.lookup(device_name());
}

WorkerProcess& Evaluator::running(std::unique_ptr<WorkerProcess>& worker, const std::string& role) {
    if (!worker || !worker->alive()) {
        note("the " + role + " is gone; starting a new one");
        if (&worker == &zygote_) drop_spare();
        worker = std::make_unique<WorkerProcess>(options_.env, role);
    }
    worker->hello(kStartSeconds);
    return *worker;
}

std::vector<pid_t> Evaluator::worker_pids() const {
    std::vector<pid_t> pids;
    for (const auto* worker : {judge_.get(), zygote_.get()})
        if (worker) pids.push_back(worker->pid());
    return pids;
}

WorkerProcess& Evaluator::judge() {
    return running(judge_, "judge");
}

WorkerProcess& Evaluator::zygote() {
    return running(zygote_, "zygote");
}

std::string Evaluator::device_name() const {
    return device_info_.value("name", std::string("?"));
}

Verdict make_verdict(const CheckConfig& c, const ProblemSpec& problem,
                     const CandidateSpec& candidate, const std::string& device_name) {
    Verdict v;
    v.problem = {problem.level, problem.id, problem.name, sha256_hex(problem.code)};
    v.candidate = {candidate.path.string(), sha256_hex(candidate.code),
                   std::string(to_string(candidate.backend)), candidate.sample_id};
    v.config = c.to_json();
    v.config["device_name"] = device_name;
    v.config["atol"] = c.atol();
    v.config["rtol"] = c.rtol();
    v.config["policy"] = integrity::RulePolicy::of(c).to_json();
    v.correctness.trials = c.trials;
    return v;
}

Verdict Evaluator::blank_verdict(const ProblemSpec& problem, const CandidateSpec& candidate) {
    Verdict v = make_verdict(problem_config_, problem, candidate, device_name());
    if (!precision_state_.is_null()) v.config["precision_state"] = precision_state_;
    return v;
}

Verdict Evaluator::evaluate(const ProblemSpec& problem, const CandidateSpec& candidate,
                            const Upcoming& upcoming) {
    std::string failure;
    for (int attempt = 0; attempt < 2; ++attempt) {
        // A sandbox started early for this candidate that its evaluation did not use (it
        // ended before its sandbox phases) goes at once, with its device context.
        struct DropUnused {
            Evaluator& self;
            const CandidateSpec& candidate;
            ~DropUnused() {
                if (self.spare_ && self.spare_->key == self.staged_key(candidate))
                    self.drop_spare();
            }
        } drop_unused{*this, candidate};
        try {
            Verdict v = evaluate_once(problem, candidate, upcoming);
            // A worker died the first time: the verdict says so, never as if nothing happened.
            if (!failure.empty())
                v.integrity.push_back(
                    {"worker_died", Severity::warn,
                     "kbench's own workers failed while this candidate was evaluated (" +
                         capped(error_line(failure), 400) +
                         "); it was evaluated again with fresh workers"});
            return v;
        } catch (const ProblemTooLarge& e) {
            if (!options_.reference_failures_are_verdicts) throw;
            Verdict v = blank_verdict(problem, candidate);
            decide(v, Decision::of_problem(std::string(e.what()) + "; " + e.hint()));
            v.memory = {{"plan", e.plan().to_json()}};
            return v;
        } catch (const ReferenceError& e) {
            if (!options_.reference_failures_are_verdicts) throw;
            Verdict v = blank_verdict(problem, candidate);
            decide(v, Decision::of_reference(reference_failure_reason(problem.code, e.what())));
            v.log = capped(e.what(), 16000);
            return v;
        } catch (const UsageError&) {
            throw;
        } catch (const InfraError& e) {
            // kbench is being interrupted and killed its workers: nothing to retry.
            if (InterruptGuard::interrupted()) throw;
            failure = e.what();
            note("harness failure (attempt " + std::to_string(attempt + 1) +
                 "): " + (options_.verbose ? failure : error_line(failure)));
            try {
                start_workers();
            } catch (const std::exception& restart) {
                // No judge, no verdicts: stop rather than charge every later candidate.
                throw InfraError(
                    std::string("the workers could not be restarted after a harness "
                                "failure: ") +
                        restart.what() + "\nfirst failure: " + failure,
                    "check the device (nvidia-smi) and the worker logs; then run again");
            }
        } catch (const std::exception& e) {
            // kbench's own fault with this candidate: its verdict, and the run goes on.
            Verdict v = blank_verdict(problem, candidate);
            decide(v,
                   Decision::of_kbench(
                       std::string("kbench failed while evaluating this candidate: ") + e.what()));
            return v;
        }
    }
    // Twice with this candidate, and fresh workers have started since: say so, since a
    // candidate that signals or kills other processes looks exactly like this.
    Verdict v = blank_verdict(problem, candidate);
    decide(v, Decision::of_kbench(
                  capped(failure, 2000) +
                  " (twice while this candidate was evaluated, with fresh workers each time; the "
                  "workers restarted cleanly afterwards, so the candidate itself may cause it)"));
    return v;
}

protocol::Audited Evaluator::audit(const ProblemSpec& problem, int trials) {
    std::optional<protocol::Reply<protocol::Audited>> answer;
    try {
        prepare(problem);
        answer = judge().call<protocol::Audited>(protocol::AuditRequest{trials}, 1800);
    } catch (const InfraError&) {
        judge_.reset();  // the next problem gets a judge of its own
        throw;
    }
    auto& reply = *answer;
    if (reply.ok()) return *reply.value;
    const protocol::Fault& f = *reply.fault;
    if (f.kind == protocol::FaultKind::reference)
        throw ReferenceError("the reference program failed: " + error_line(f.message),
                             "check the reference file with the same Python and device");
    throw InfraError("the judge could not audit the problem: " + f.message);
}

protocol::BaselineTimed Evaluator::baseline(const ProblemSpec& problem,
                                            const protocol::BaselineRequest& request,
                                            double limit_s, DeviceTurns* turns) {
    std::optional<protocol::Reply<protocol::BaselineTimed>> answer;
    try {
        {
            auto turn = DeviceTurns::shared(turns);
            // A judge of its own: nothing of an earlier problem's compiled graphs stays.
            judge_.reset();
            judge_ = std::make_unique<WorkerProcess>(options_.env, "judge");
            prepare(problem);
        }
        if (!request.compile.empty()) {
            // The compile beside other judges' work, except max-autotune's, whose choices come
            // from timing them on the device.
            bool autotunes = request.compile.find("autotune") != std::string::npos;
            auto turn = autotunes ? DeviceTurns::alone(turns) : DeviceTurns::shared(turns);
            protocol::BaselineRequest compile = request;
            compile.time = false;
            answer = judge().call<protocol::BaselineTimed>(compile, limit_s);
        }
        if (!answer || answer->ok()) {
            auto turn = DeviceTurns::alone(turns);
            answer = judge().call<protocol::BaselineTimed>(request, limit_s);
        }
    } catch (const InfraError&) {
        judge_.reset();
        throw;
    }
    auto& reply = *answer;
    if (reply.ok() && reply.value->measured) return *reply.value;
    if (reply.ok()) throw InfraError("the judge sent the baseline back untimed");
    const protocol::Fault& f = *reply.fault;
    if (f.kind == protocol::FaultKind::reference)
        throw ReferenceError("the reference program failed: " + error_line(f.message),
                             "check the reference file with the same Python and device");
    throw InfraError("the judge could not time the reference: " + f.message);
}

void Evaluator::check_judge_health() {
    auto ask = [&] {
        auto reply = judge().call<protocol::Health>(protocol::HealthRequest{}, 60);
        if (!reply.ok())
            throw InfraError("the judge failed its health check: " + reply.fault->message);
        return *reply.value;
    };
    protocol::Health health = ask();
    if (health.healthy) return;
    drop_spare();  // started on the device now in doubt
    note("the device looks unhealthy after a sandbox failure (" + health.error +
         "); restarting the judge");
    judge_.reset();
    health = ask();
    if (!health.healthy)
        throw InfraError("the device is unhealthy: " + health.error,
                         "check nvidia-smi; the GPU may need attention before more runs");
}

void Evaluator::prepare(const ProblemSpec& problem) {
    const CheckConfig& c = options_.config;
    problem_config_ = c;  // until this problem's plan says otherwise
    protocol::PrepareProblem request{problem.name,
                                     problem.code,
                                     sha256_hex(problem.code),
                                     c.seed,
                                     c.trials,
                                     std::string(to_string(c.precision)),
                                     std::string(to_string(c.mode)),
                                     c.atol(),
                                     c.rtol(),
                                     c.tf32,
                                     c.device_memory,
                                     c.measure && c.timing.rounds()};
    auto reply = judge().call<protocol::ProblemPrepared>(request, 600);
    if (reply.ok()) {
        precision_state_ = reply.value->precision;
        detail("  reference inputs made in " + seconds_text(reply.value->inputs_seconds));
        plan_memory_for(*reply.value);
        return;
    }
    const protocol::Fault& f = *reply.fault;
    if (f.kind == protocol::FaultKind::reference)
        throw ReferenceError(
            "the reference program failed: " + error_line(f.message) + "\n" + f.message,
            "check the reference file with the same Python and device");
    throw InfraError("the judge could not prepare the problem: " + f.message);
}

void Evaluator::plan_memory_for(const protocol::ProblemPrepared& prepared) {
    const CheckConfig& c = options_.config;
    // A CPU's memory is the machine's: planned (the audit shows it), never refused.
    if (device_info_.value("type", "") != "cuda") {
        plan_ = plan_memory(prepared.memory, prepared.device_bytes, c.measure && c.timing.rounds(),
                            c.mode == Mode::strict);
        return;
    }
    // As the judge plans it: without rounds where only that fits.
    plan_ = plan_fitting(prepared.memory, prepared.device_bytes, c.measure && c.timing.rounds(),
                         c.mode == Mode::strict);
    if (plan_->rounds_dropped) {
        problem_config_.timing.alternate = false;
        detail(
            "  rounds are off for this problem: the device has room for one sandbox beside "
            "the judge, not two; the baseline is timed in the judge, apart from the "
            "candidate (with rounds it " +
            plan_memory(prepared.memory, prepared.device_bytes, true, c.mode == Mode::strict)
                .needs_text() +
            ")");
    }
    detail("  memory plan: " + plan_->needs_text());
    // The judge's first call of the reference ran out of memory (it measured no call then).
    bool first_call_failed = prepared.trial_bytes == 0;
    if (first_call_failed || !plan_->fits())
        throw ProblemTooLarge(*plan_, device_name(), first_call_failed);
}

Verdict Evaluator::evaluate_once(const ProblemSpec& problem, const CandidateSpec& candidate,
                                 const Upcoming& upcoming) {
    // The reference first: its failure is no candidate's, and the verdict records the judge's
    // precision flags even when the candidate does not build.
    prepare(problem);
    Verdict v = blank_verdict(problem, candidate);
    v.problem_health =
        integrity::HealthStore::in_cache().load(v.problem.sha256, options_.config.precision);
    auto start = Clock::now();
    struct Done {
        Evaluator& self;
        Verdict& v;
        std::string name;
        Clock::time_point start;
        ~Done() {
            self.detail("  " + name + ": " + std::string(to_string(v.status)) + " after " +
                        seconds_text(seconds_since(start)));
        }
    } done{*this, v, candidate.path.filename().string(), start};
    detail("evaluating " + candidate.path.filename().string() + " for " + problem.name + " on " +
           options_.config.device);
    // The static rules first: a candidate they reject is never built.
    const integrity::StaticReport& report = builds_.review(candidate);
    v.phases_s["review"] = report.seconds;
    std::vector<Finding> findings = report.findings(integrity::RulePolicy::of(options_.config));
    v.integrity.insert(v.integrity.end(), findings.begin(), findings.end());
    if (const Finding* rejection = integrity::first_rejection(findings)) {
        decide(v, Decision::rejected(rejection->rule, integrity::rejection_reason(findings) + ": " +
                                                          rejection->detail));
        return v;
    }
    double build_s = 0;
    build::BuildRecord record = builds_.build(candidate, build_s);
    v.phases_s["build"] = build_s;
    if (record.outcome == BuildOutcome::compile_error || record.outcome == BuildOutcome::timeout) {
        decide(v, record.outcome == BuildOutcome::timeout
                      ? Decision::failed(Status::timeout, last_line(record.log))
                      : Decision::failed(Status::compile_error,
                                         "compile error: " + first_error_line(record.log)));
        v.log = capped(record.log, 16000);
        return v;
    }
    run_phases(problem, candidate, v, upcoming);
    if (needs_health_check(v.status))
        check_judge_health();  // a device error can reach past the sandbox's own context
    return v;
}

std::string Evaluator::staged_key(const CandidateSpec& candidate) {
    return staged_key(builds_.key(candidate), candidate);
}

std::string Evaluator::staged_key(const std::string& build_key, const CandidateSpec& candidate) {
    return build_key + "/" + candidate.path.filename().string();
}

std::unique_ptr<Evaluator::Staged> Evaluator::stage(const CandidateSpec& candidate) {
    auto staged = std::make_unique<Staged>();
    const std::string build_key = builds_.key(candidate);
    staged->key = staged_key(build_key, candidate);
    staged->scratch = options_.scratch_dir / ("sandbox-" + std::to_string(++sandbox_count_));
    fs::create_directories(staged->scratch);
    staged->file = staged->scratch / candidate.path.filename();
    std::map<std::string, std::string> env =
        builds_.sandbox_environment(build_key, staged->scratch);
    options_.policy.hand_over(staged->scratch, options_.scratch_dir);
    auto forked = Clock::now();
    staged->sandbox = std::make_unique<SandboxProcess>(
        zygote(),
        SandboxProcess::Options{
            "sandbox", options_.env.device_kind, staged->scratch, env,
            options_.policy.lockdown(staged->scratch, BuilderPool::readable_support(env))});
    // Its folder (a tmpfs of its own under the disk quota) is filled once it has started: until
    // the judge has it load the candidate, it runs kbench's code only and reads nothing there.
    const fs::path folder = staged->sandbox->folder();
    write_file_atomic(folder / candidate.path.filename(), candidate.code);
    builds_.place_builds(build_key, folder);
    // The candidate's modules as kbench placed them, read before they are the dedicated
    // user's and before the candidate is loaded.
    std::error_code missing;
    std::vector<fs::path> modules;
    for (const auto& entry : fs::recursive_directory_iterator(folder / "prebuilt", missing))
        if (entry.is_regular_file() && entry.path().extension() == ".so")
            modules.push_back(entry.path());
    staged->origins = integrity::KernelOrigins::of(builds_.review(candidate), modules);
    options_.policy.hand_over_contents(folder);
    staged->start_s = seconds_since(forked);
    return staged;
}

void Evaluator::stage_upcoming(const Upcoming& upcoming) {
    // Never a new zygote here: the reference's sandbox, ending beside this, holds the old one.
    if (!upcoming || spare_ || !zygote_ || !zygote_->alive()) return;
    std::optional<CandidateSpec> next = upcoming();
    if (!next) return;
    try {
        // Only a candidate that will reach a sandbox: not one a static rule rejects, nor one
        // whose build failed (its build is done: the queue hands out ready ones only).
        if (integrity::first_rejection(
                builds_.review(*next).findings(integrity::RulePolicy::of(options_.config))))
            return;
        double ignored = 0;
        if (builds_.build(*next, ignored).outcome != BuildOutcome::ok) return;
        spare_ = stage(*next);
        spare_->early = true;
    } catch (const std::exception& e) {
        // Started when its turn comes instead.
        drop_spare();
        detail(std::string("  the next candidate's sandbox could not start early: ") + e.what());
    }
}

void Evaluator::run_phases(const ProblemSpec& problem, const CandidateSpec& candidate, Verdict& v,
                           const Upcoming& upcoming) {
    const CheckConfig& c = problem_config_;
    std::unique_ptr<Staged> staged;
    // Started early for this candidate, and still there (the OOM killer takes sandboxes first).
    if (spare_ && spare_->key == staged_key(candidate) && spare_->sandbox->running())
        staged = std::move(spare_);
    drop_spare();  // started for another candidate, or gone: not used
    if (!staged) staged = stage(candidate);
    const fs::path scratch = staged->scratch;
    const fs::path file = staged->file;
    integrity::KernelOrigins origins = std::move(staged->origins);
    SandboxProcess& sandbox = *staged->sandbox;
    detail("  sandbox " + std::to_string(sandbox.pid()) + " started in " +
           seconds_text(staged->start_s) +
           (staged->early ? ", beside the end of the candidate before it" : ""));
    v.config["sandbox"] = sandbox.layers().to_json();
    say_missing_layers_once(sandbox.layers(), options_.log);
    JudgeProcessClient client(judge());
    SandboxProcessHandle handle(sandbox);
    PhaseContext context{c, client, handle, v, [this](const std::string& line) { detail(line); }};
    context.rules = integrity::RulePolicy::of(c);
    context.origins = std::move(origins);
    context.gpu_entry = gpu_entry_;
    for (const auto& flag : integrity::health_flags(v.problem_health))
        context.constant_output = context.constant_output || flag == "constant_output";
    // Never beside a process of this candidate's (a failure's end can reach here early), nor
    // before the device's health check that a failure of these statuses is followed by.
    context.candidate_ended = [&, this] {
        if (!sandbox.running() && !needs_health_check(v.status)) stage_upcoming(upcoming);
    };

    // Rounds (kbench's protocol): the baseline's requests go to a sandbox of the reference's own,
    // started once the candidate is to be timed, under the same confinement as the candidate's,
    // so that both sides take the same path to the GPU.
    fs::path reference_scratch;
    std::optional<SandboxProcess> reference;
    bool reference_attached = false;
    if (c.measure && c.timing.rounds()) {
        reference_scratch = scratch.string() + "-reference";
        context.reference_file = (reference_scratch / "reference.py").string();
        context.prestart_reference = [&, this] {
            if (reference) return;
            fs::create_directories(reference_scratch / "home");
            auto reference_env = BuilderPool::sandbox_environment(reference_scratch / "home");
            options_.policy.hand_over(reference_scratch / "home", options_.scratch_dir);
            reference.emplace(zygote(),
                              SandboxProcess::Options{"sandbox", options_.env.device_kind,
                                                      reference_scratch, reference_env,
                                                      options_.policy.lockdown(reference_scratch)});
            // The reference as a candidate: its Model serves as ModelNew. Without the disk
            // quota the file and its folder stay kbench's (read-only to the dedicated user, whom
            // every sandbox shares: where Landlock is off, a candidate of another kbench command
            // could otherwise rewrite it) and the sandbox writes only in home; with it, they
            // are in a tmpfs that no other process sees.
            const fs::path folder = reference->folder();
            write_file_atomic(folder / "reference.py", problem.code + "\n\nModelNew = Model\n");
            fs::create_directories(folder / "home");
            options_.policy.hand_over_contents(folder / "home");
        };
        context.reference_first =
            plan_ && plan_->reference_exports && device_info_.value("type", "") == "cuda";
        context.start_reference = [&]() -> std::pair<int, std::int64_t> {
            context.prestart_reference();
            reference_attached = true;
            return {reference->take_control(), std::int64_t(reference->pid())};
        };
        context.end_reference = [&] {
            if (reference && reference_attached) reference->finish();
        };
    }

    // On GPUs both sandboxes are timed on one core of their own: measured on the H200 with
    // identity candidates, whole runs differed by 1-3% (and a launch-bound model's by up to 20%)
    // while both sides ran the same kernels for the same GPU time a call, that is, in the CPU's
    // part of each call; with every process on one core the spread fell to 0.4% and 5%. The
    // judge stays where it is: its threads at normal priority would preempt the candidate's
    // there. The sandboxes cannot move themselves (seccomp refuses sched_setaffinity).
    // The candidate's processes are stopped while they are pinned: one that kept starting
    // threads could otherwise keep one ahead of the passes, off the core at normal priority.
    // After the timing, a thread found elsewhere (none can move itself) is named in the verdict,
    // which then lacks config.timing_core; then both are let go to the cores they had.
    std::vector<int> candidate_cores, reference_cores;  // where they ran before the pin
    if (options_.timing_core >= 0) {
        context.pin_for_timing = [&, this] {
            const std::vector<int> core{options_.timing_core};
            candidate_cores = sandbox::cores_of(sandbox.pid());
            if (reference) reference_cores = sandbox::cores_of(reference->pid());
            std::string why;
            // On a core it shares with the baseline, the candidate's processes run only when
            // the baseline's do not want it: work of its own beside the baseline's requests
            // (below work_beside_baseline's threshold) cannot take the core from them. Alone
            // on the core for its own requests, it loses nothing.
            bool pinned = sandbox::pin_process_tree(sandbox.pid(), core, true, true, &why) &&
                          (!reference ||
                           sandbox::pin_process_tree(reference->pid(), core, false, false, &why));
            if (pinned) {
                v.config["timing_core"] = options_.timing_core;
                return;
            }
            // Maybe the candidate's doing (processes that continue one another, a session of
            // their own): named in the verdict.
            v.integrity.push_back(
                {"timing_core_left", Severity::warn, "not timed on the timing core: " + why});
            say_once("the candidate and the baseline are timed without a core of their own: " +
                         why + " (verdicts lack config.timing_core)",
                     options_.log);
        };
        context.after_timing = [&, this] {
            const std::vector<int> core{options_.timing_core};
            std::vector<std::string> off;
            if (v.config.contains("timing_core")) {
                off = sandbox::unpinned_threads(sandbox.pid(), core, true);
                if (reference)
                    for (auto& t : sandbox::unpinned_threads(reference->pid(), core, false))
                        off.push_back("the reference's " + t);
            }
            // Released to the cores they had: on one core, the candidate's end (its CUDA
            // context's, mostly) and then the reference's took 0.33 s a candidate on the H200,
            // against 0.21 s unpinned. No timing is under way until both have ended.
            sandbox::release_process_tree(sandbox.pid(), candidate_cores);
            if (reference) sandbox::release_process_tree(reference->pid(), reference_cores);
            if (off.empty()) return;
            std::string names;
            for (const auto& t : off) names += (names.empty() ? "" : ", ") + t;
            v.config.erase("timing_core");
            v.integrity.push_back(
                {"timing_core_left", Severity::warn,
                 "threads off the timing core (or not under SCHED_IDLE) after the timing: " +
                     names});
        };
    }
    run_pipeline(context, sandbox.take_control(), sandbox.pid(), file.string());
    if (v.status != Status::correct)
        if (std::string full = sandbox.full_folder(); !full.empty()) v.reason += " (" + full + ")";
    // Started for a timing that never came: nothing of it is needed.
    if (reference) reference_attached ? reference->finish() : reference->kill();
    if (v.status == Status::correct)
        builds_.keep_run_time_builds(builds_.key(candidate), sandbox.folder());
    std::error_code ignored;
    fs::remove_all(scratch, ignored);
    if (!reference_scratch.empty()) fs::remove_all(reference_scratch, ignored);
}

}  // namespace kbench::orchestrator
