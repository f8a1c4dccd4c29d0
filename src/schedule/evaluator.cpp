#include "schedule/evaluator.hpp"

#include <unistd.h>

#include <algorithm>
#include <thread>

#include "core/error.hpp"
#include "core/sha256.hpp"
#include "score/speedup.hpp"

namespace kbench::schedule {
namespace {

using sandbox::Channel;
using sandbox::Clock;

double seconds_since(Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
}

double seconds_left(Clock::time_point deadline) {
    return std::max(0.0, std::chrono::duration<double>(deadline - Clock::now()).count());
}

Clock::time_point after(double seconds) {
    return Clock::now() + std::chrono::milliseconds(long(seconds * 1000));
}

std::string seconds_text(double seconds) {
    char text[32];
    std::snprintf(text, sizeof(text), "%.1f s", seconds);
    return text;
}

std::string last_line(const std::string& text) {
    std::size_t end = text.find_last_not_of(" \n\r\t");
    if (end == std::string::npos) return {};
    std::size_t start = text.rfind('\n', end);
    start = start == std::string::npos ? 0 : start + 1;
    return text.substr(start, end - start + 1);
}

std::string capped(const std::string& text, std::size_t limit) {
    if (text.size() <= limit) return text;
    return text.substr(0, limit / 2) + "\n[... " + std::to_string(text.size() - limit) +
           " bytes dropped ...]\n" + text.substr(text.size() - limit / 2);
}

// The first line of compiler output that reports an error, for a one-line reason.
std::string first_error_line(const std::string& log) {
    std::size_t pos = 0;
    while (pos < log.size()) {
        std::size_t end = log.find('\n', pos);
        std::string line =
            log.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
        if (line.find("error") != std::string::npos &&
            line.find("Error building") == std::string::npos)
            return capped(line, 400);
        if (end == std::string::npos) break;
        pos = end + 1;
    }
    return capped(last_line(log), 400);
}

// How long a worker may take to import torch and initialise its device.
constexpr double kStartSeconds = 120;

}  // namespace

int Evaluator::builder_count() const {
    if (options_.builders > 0) return options_.builders;
    unsigned cores = std::max(1u, std::thread::hardware_concurrency());
    return int(std::max(1u, cores / 2));
}

Evaluator::Evaluator(EvaluatorOptions options)
    : options_(std::move(options)), cache_(options_.cache_dir) {
    fs::create_directories(options_.scratch_dir);
    start_workers();
}

Evaluator::~Evaluator() = default;

void Evaluator::note(const std::string& line) {
    if (options_.log) options_.log(line);
}

void Evaluator::detail(const std::string& line) {
    if (options_.verbose) note(line);
}

void Evaluator::start_workers() {
    judge_.reset();
    zygote_.reset();
    // Both import torch at once; the judge also initialises the device.
    judge_ = std::make_unique<WorkerProcess>(options_.env, "judge");
    zygote_ = std::make_unique<WorkerProcess>(options_.env, "zygote");
    const json& hello = judge_->hello(kStartSeconds);
    zygote_->hello(kStartSeconds);
    device_info_ = hello.at("device");
    fingerprint_ = "kbench 1\n" + hello.value("torch", std::string()) + "\n" +
                   hello.value("cuda", std::string()) + "\n" +
                   hello.value("python", std::string()) + "\n" +
                   device_info_.value("capability", std::string("cpu"));
}

WorkerProcess& Evaluator::judge() {
    if (!judge_ || !judge_->alive()) {
        note("the judge is gone; starting a new one");
        judge_ = std::make_unique<WorkerProcess>(options_.env, "judge");
    }
    judge_->hello(kStartSeconds);
    return *judge_;
}

WorkerProcess& Evaluator::zygote() {
    if (!zygote_ || !zygote_->alive()) {
        note("the zygote is gone; starting a new one");
        zygote_ = std::make_unique<WorkerProcess>(options_.env, "zygote");
    }
    zygote_->hello(kStartSeconds);
    return *zygote_;
}

std::string Evaluator::device_name() const {
    return device_info_.value("name", std::string("?"));
}

std::string Evaluator::build_key(const CandidateSpec& candidate) {
    return build::BuildCache::key(candidate.code, candidate.backend, options_.config.precision,
                                  fingerprint_);
}

json Evaluator::sandbox_env(const std::string& key) {
    json env = {{"TORCH_EXTENSIONS_DIR", cache_.torch_extensions_dir(key).string()},
                {"TRITON_CACHE_DIR", cache_.triton_dir(key).string()}};
    std::string capability = device_info_.value("capability", std::string());
    // Builder and sandbox must agree on the targets, or the sandbox would rebuild.
    if (!capability.empty()) env["TORCH_CUDA_ARCH_LIST"] = capability;
    return env;
}

// A build in flight in a builder process.
struct PendingBuild {
    std::string key;
    std::unique_ptr<build::BuildCache::Lock> lock;
    std::unique_ptr<SandboxProcess> process;
    Clock::time_point start;
};

void Evaluator::prebuild(const std::vector<CandidateSpec>& candidates) {
    std::vector<const CandidateSpec*> todo;
    std::vector<std::string> keys;
    for (const auto& c : candidates) {
        std::string key = build_key(c);
        if (cache_.lookup(key) || std::find(keys.begin(), keys.end(), key) != keys.end()) continue;
        keys.push_back(key);
        todo.push_back(&c);
    }
    int width = builder_count();
    for (std::size_t begin = 0; begin < todo.size(); begin += std::size_t(width)) {
        std::size_t end = std::min(todo.size(), begin + std::size_t(width));
        note("building " + std::to_string(end - begin) + " candidate(s) (" + std::to_string(end) +
             "/" + std::to_string(todo.size()) + ")");
        std::vector<std::thread> threads;
        std::vector<double> spent(end - begin);
        // Each build waits on its own process; threads keep them concurrent.
        for (std::size_t i = begin; i < end; ++i)
            threads.emplace_back([this, &todo, &spent, i, begin] {
                try {
                    build(*todo[i], spent[i - begin]);
                } catch (const std::exception& e) {
                    note(std::string("build failed in the harness: ") + e.what());
                }
            });
        for (auto& t : threads) t.join();
    }
}

build::BuildRecord Evaluator::build(const CandidateSpec& candidate, double& spent_s) {
    spent_s = 0;
    std::string key = build_key(candidate);
    if (auto cached = cache_.lookup(key)) return *cached;
    auto lock = cache_.lock(key);
    if (auto cached = cache_.lookup(key)) return *cached;  // built meanwhile by someone else

    auto start = Clock::now();
    fs::path scratch = options_.scratch_dir / ("build-" + key.substr(0, 16));
    fs::create_directories(scratch);
    fs::path file = scratch / candidate.path.filename();
    write_file_atomic(file, candidate.code);
    json env = sandbox_env(key);
    env["CUDA_VISIBLE_DEVICES"] = "";  // builds see no GPU
    env["TMPDIR"] = scratch.string();
    // The cores are shared among the builders that run at once.
    env["MAX_JOBS"] = std::to_string(
        std::max(1u, std::thread::hardware_concurrency() / unsigned(builder_count())));
    fs::create_directories(cache_.torch_extensions_dir(key));

    build::BuildRecord record;
    double limit = options_.config.limits.build_s;
    detail("  building " + candidate.path.filename().string());
    auto process = std::make_unique<SandboxProcess>(
        *zygote_, SandboxProcess::Options{"builder", options_.env.device_kind, scratch, env});
    auto hello = process->hello(limit);
    auto reply =
        hello.event == Channel::Event::message
            ? process->call({{"op", "build"}, {"candidate_file", file.string()}},
                            seconds_left(start + std::chrono::milliseconds(long(limit * 1000))))
            : hello;
    if (reply.event == Channel::Event::timed_out) {
        process->kill();
        record = {"timeout",
                  "the build did not finish within " + std::to_string(int(limit)) + " s\n" +
                      capped(process->output(), 16000),
                  seconds_since(start)};
    } else if (reply.event == Channel::Event::closed) {
        auto status = process->kill();
        record = {
            "import_error",
            "the builder died (" + status.describe() + ")\n" + capped(process->output(), 16000),
            seconds_since(start)};
    } else {
        process->finish();
        std::string status = reply.body.value("ok", false)
                                 ? "ok"
                                 : reply.body.value("status", std::string("import_error"));
        std::string log = reply.body.value("error", std::string());
        if (log.empty()) log = process->output();
        record = {status, capped(log, 64000), seconds_since(start)};
    }
    std::error_code ignored;
    fs::remove_all(scratch, ignored);
    {
        std::lock_guard<std::mutex> guard(build_seconds_mutex_);
        build_seconds_[key] = record.seconds;
    }
    // Timeouts are not kept: a loaded machine may build it next time.
    if (record.status != "timeout") cache_.store(key, record);
    detail("  built " + candidate.path.filename().string() + ": " + record.status + " in " +
           seconds_text(record.seconds));
    spent_s = record.seconds;
    return record;
}

Verdict Evaluator::blank_verdict(const ProblemSpec& problem, const CandidateSpec& candidate) {
    Verdict v;
    v.problem = {problem.level, problem.id, problem.name, sha256_hex(problem.code)};
    v.candidate = {candidate.path.string(), sha256_hex(candidate.code),
                   std::string(to_string(candidate.backend)), candidate.sample_id};
    const CheckConfig& c = options_.config;
    v.config = {{"mode", std::string(to_string(c.mode))},
                {"precision", std::string(to_string(c.precision))},
                {"trials", c.trials},
                {"seed", c.seed},
                {"device", c.device},
                {"device_name", device_name()},
                {"atol", c.atol()},
                {"rtol", c.rtol()}};
    v.correctness.trials = c.trials;
    return v;
}

Verdict Evaluator::evaluate(const ProblemSpec& problem, const CandidateSpec& candidate) {
    std::string failure;
    for (int attempt = 0; attempt < 2; ++attempt) {
        try {
            return evaluate_once(problem, candidate);
        } catch (const InfraError& e) {
            failure = e.what();
            note("harness failure (attempt " + std::to_string(attempt + 1) +
                 "): " + (options_.verbose ? failure : last_line(failure)));
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
        }
    }
    Verdict v = blank_verdict(problem, candidate);
    v.status = Status::infra_error;
    v.reason = capped(failure, 2000);
    return v;
}

json Evaluator::judge_call(const json& request, double timeout_s) {
    json reply = judge().request(request, timeout_s);
    if (reply.value("ok", false)) return reply;
    std::string error = reply.value("error", std::string("?"));
    if (reply.value("fault", std::string()) == "reference")
        throw UsageError("the reference program failed: " + last_line(error) + "\n" + error,
                         "check the reference file with the same Python and device");
    throw InfraError("the judge failed on '" + request.value("op", std::string()) + "': " + error);
}

void Evaluator::check_judge_health() {
    json reply = judge().request({{"op", "health"}}, 60);
    if (reply.value("healthy", false)) return;
    note("the device looks unhealthy after a sandbox failure (" +
         reply.value("error", std::string("?")) + "); restarting the judge");
    judge_.reset();
    judge();
    json again = judge().request({{"op", "health"}}, 60);
    if (!again.value("healthy", false))
        throw InfraError("the device is unhealthy: " + again.value("error", std::string("?")),
                         "check nvidia-smi; the GPU may need attention before more runs");
}

bool Evaluator::accept(const Channel::Reply& reply, SandboxProcess& sandbox,
                       const std::string& phase, double limit_s, Verdict& v) {
    if (reply.event == Channel::Event::message && reply.body.value("ok", false)) return true;
    if (reply.event == Channel::Event::message) {
        std::string error = reply.body.value("error", std::string());
        Status status =
            parse_status(reply.body.value("status", std::string())).value_or(Status::runtime_error);
        if (error.find("Error building extension") != std::string::npos)
            status = Status::compile_error;
        if (status != Status::load_error && status != Status::compile_error)
            status = Status::runtime_error;
        v.status = status;
        v.reason = phase + ": " + capped(last_line(error), 600);
        sandbox.finish();
        v.log = capped(error + "\n" + sandbox.output(), 16000);
        // A CUDA error can leave more than the sandbox's own context in trouble.
        if (error.find("CUDA") != std::string::npos || error.find("cuda") != std::string::npos)
            check_judge_health();
        return false;
    }
    if (reply.event == Channel::Event::timed_out) {
        sandbox.kill();
        v.status = Status::timeout;
        v.reason = phase + " did not finish within " + std::to_string(int(limit_s)) + " s";
    } else {
        sandbox::ExitStatus status = sandbox.kill();
        v.status = Status::crash;
        v.reason = "the sandbox died during " + phase + ": " + status.describe();
    }
    v.log = capped(sandbox.output(), 16000);
    check_judge_health();
    return false;
}

Verdict Evaluator::evaluate_once(const ProblemSpec& problem, const CandidateSpec& candidate) {
    Verdict v = blank_verdict(problem, candidate);
    auto start = Clock::now();
    struct Done {
        Evaluator& self;
        Verdict& v;
        Clock::time_point start;
        ~Done() {
            self.note("  " + std::string(to_string(v.status)) + " after " +
                      seconds_text(seconds_since(start)));
        }
    } done{*this, v, start};
    double build_s = 0;
    build::BuildRecord record = build(candidate, build_s);
    {
        // A build done ahead of time by prebuild counts here too.
        std::lock_guard<std::mutex> guard(build_seconds_mutex_);
        if (auto it = build_seconds_.find(build_key(candidate)); it != build_seconds_.end())
            build_s = it->second;
    }
    v.phases_s["build"] = build_s;
    if (record.status == "compile_error" || record.status == "timeout") {
        v.status = record.status == "timeout" ? Status::timeout : Status::compile_error;
        v.reason = record.status == "timeout" ? last_line(record.log)
                                              : "compile error: " + first_error_line(record.log);
        v.log = capped(record.log, 16000);
        return v;
    }
    const CheckConfig& c = options_.config;
    judge_call(
        {{"op", "prepare"},
         {"problem",
          {{"name", problem.name}, {"code", problem.code}, {"sha256", sha256_hex(problem.code)}}},
         {"config",
          {{"seed", c.seed},
           {"trials", c.trials},
           {"precision", std::string(to_string(c.precision))},
           {"mode", std::string(to_string(c.mode))},
           {"atol", c.atol()},
           {"rtol", c.rtol()}}}},
        600);
    run_candidate(problem, candidate, build_key(candidate), v);
    return v;
}

void Evaluator::run_candidate(const ProblemSpec& problem, const CandidateSpec& candidate,
                              const std::string& key, Verdict& v) {
    const CheckConfig& c = options_.config;
    const bool strict = c.mode == Mode::strict;
    fs::path scratch = options_.scratch_dir / ("sandbox-" + std::to_string(++sandbox_count_));
    fs::create_directories(scratch);
    fs::path file = scratch / candidate.path.filename();
    write_file_atomic(file, candidate.code);
    json env = sandbox_env(key);
    env["TMPDIR"] = scratch.string();
    SandboxProcess sandbox(zygote(), {"sandbox", options_.env.device_kind, scratch, env});

    // Load.
    auto load_start = Clock::now();
    if (!accept(sandbox.hello(c.limits.load_s), sandbox, "load", c.limits.load_s, v)) return;
    auto reply = sandbox.call(
        {{"op", "load"},
         {"reference_code", problem.code},
         {"candidate_file", file.string()},
         {"seed", c.seed},
         {"precision", std::string(to_string(c.precision))}},
        seconds_left(load_start + std::chrono::milliseconds(long(c.limits.load_s * 1000))));
    if (!accept(reply, sandbox, "load", c.limits.load_s, v)) return;
    v.phases_s["load"] = seconds_since(load_start);
    detail("  loaded in " + seconds_text(v.phases_s["load"]) + " (sandbox pid " +
           std::to_string(sandbox.pid()) + ")");

    // Correctness: every trial, each on fresh shared copies of its inputs.
    auto correctness_start = Clock::now();
    auto deadline = after(c.limits.correctness_s);
    std::string first_failure;
    for (int t = 0; t < c.trials; ++t) {
        json stage = judge_call({{"op", "stage"}, {"trial", t}}, 600);
        reply = sandbox.call({{"op", "run"},
                              {"seed", stage.at("seed")},
                              {"inputs", stage.at("inputs")},
                              {"outputs", stage.at("outputs")},
                              {"poison", strict}},
                             seconds_left(deadline));
        if (!accept(reply, sandbox, "correctness (trial " + std::to_string(t) + ")",
                    c.limits.correctness_s, v)) {
            judge_call({{"op", "drop_stages"}}, 120);
            v.phases_s["correctness"] = seconds_since(correctness_start);
            return;
        }
        json verdict = judge_call({{"op", "compare"},
                                   {"stage", stage.at("stage")},
                                   {"report", reply.body.at("report")},
                                   {"check_inputs", strict},
                                   {"where", "trial " + std::to_string(t)}},
                                  600);
        v.correctness.max_abs_diff =
            std::max(v.correctness.max_abs_diff, verdict.value("max_abs_diff", 0.0));
        v.correctness.max_rel_diff =
            std::max(v.correctness.max_rel_diff, verdict.value("max_rel_diff", 0.0));
        detail("  trial " + std::to_string(t) +
               (verdict.value("passed", false) ? ": passed" : ": failed"));
        if (verdict.value("passed", false))
            ++v.correctness.trials_passed;
        else if (first_failure.empty())
            first_failure = verdict.value("reason", std::string());
    }
    v.phases_s["correctness"] = seconds_since(correctness_start);
    if (v.correctness.trials_passed < c.trials) {
        v.status = Status::incorrect;
        v.reason = first_failure;
        sandbox.finish();
        v.log = capped(sandbox.output(), 16000);
        return;
    }
    if (!c.measure) {
        v.status = Status::correct;
        sandbox.finish();
        return;
    }

    // Timing: the candidate in its sandbox, on input sets that rotate between calls.
    auto timing_start = Clock::now();
    // Input sets that rotate between timed calls, as many as fit in an eighth of the memory.
    std::vector<int> set_trials;
    json sets = json::array(), stages = json::array();
    std::size_t budget = device_info_.value("memory_bytes", std::size_t(0)) / 8;
    int wanted = strict ? std::min(c.trials, 3) : 1;
    for (int t = 0; t < wanted; ++t) {
        int trial = strict ? t : -1;  // KernelBench times on the base seed's inputs
        json stage = judge_call({{"op", "stage"}, {"trial", trial}}, 600);
        set_trials.push_back(trial);
        sets.push_back({{"inputs", stage.at("inputs")}, {"outputs", stage.at("outputs")}});
        stages.push_back(stage.at("stage"));
        std::size_t bytes = stage.value("bytes", std::size_t(0));
        if (bytes > 0 && budget > 0) wanted = std::clamp(int(budget / bytes), 1, wanted);
    }
    detail("  timing over " + std::to_string(set_trials.size()) + " input set(s)");
    reply = sandbox.call({{"op", "time"}, {"sets", sets}, {"timing", c.timing.to_json()}},
                         c.limits.timing_s);
    if (!accept(reply, sandbox, "timing", c.limits.timing_s, v)) {
        judge_call({{"op", "drop_stages"}}, 120);
        return;
    }
    sandbox.finish();
    std::size_t last_set = reply.body.value("last_set", std::size_t(0));
    if (strict) {
        json recheck = judge_call({{"op", "compare"},
                                   {"stage", stages.at(last_set)},
                                   {"report", reply.body.at("report")},
                                   {"check_inputs", true},
                                   {"where", "the last timed call"}},
                                  600);
        if (!recheck.value("passed", false)) {
            judge_call({{"op", "drop_stages"}}, 120);
            v.status = Status::incorrect;
            v.reason = recheck.value("reason", std::string()) +
                       " (outputs of timed calls are checked too)";
            return;
        }
    }
    judge_call({{"op", "drop_stages"}}, 120);
    const json& measured = reply.body.at("measurement");
    v.timing = TimingResult::from_json(measured);
    int outside = measured.value("outside_stream_samples", 0);
    if (outside > 0)
        v.integrity.push_back(
            {"work_outside_stream", "warn",
             std::to_string(outside) + " of " + std::to_string(v.timing->n) +
                 " samples: the device was busy after the launch stream's end event; those "
                 "samples use the host clock across a device-wide synchronisation"});
    v.phases_s["timing"] = seconds_since(timing_start);

    // Baseline: the reference, timed in the judge, which never loads candidate code.
    detail("  timed: median " + std::to_string(int(v.timing->median_us)) +
           " us, n=" + std::to_string(v.timing->n) + "; timing the baseline");
    auto baseline_start = Clock::now();
    json baseline =
        judge_call({{"op", "baseline"}, {"trials", set_trials}, {"timing", c.timing.to_json()}},
                   std::max(120.0, 2 * c.limits.timing_s));
    const json& base = baseline.at("measurement");
    v.baseline = TimingResult::from_json(base);
    v.phases_s["baseline"] = seconds_since(baseline_start);
    auto statistic =
        v.timing->statistic == "mean" ? score::Statistic::mean : score::Statistic::median;
    auto estimate =
        score::estimate_speedup(base.at("samples_us").get<std::vector<double>>(),
                                measured.at("samples_us").get<std::vector<double>>(), statistic);
    v.speedup = estimate.speedup;
    v.speedup_ci95 = {estimate.ci_lo, estimate.ci_hi};
    v.status = Status::correct;
}

}  // namespace kbench::schedule
