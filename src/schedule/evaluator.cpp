#include "schedule/evaluator.hpp"

#include <unistd.h>

#include <algorithm>
#include <random>
#include <regex>
#include <thread>

#include "core/error.hpp"
#include "core/sha256.hpp"
#include "schedule/text.hpp"
#include "score/speedup.hpp"

namespace kbench::schedule {
namespace {

using sandbox::Channel;
using sandbox::Clock;

// How long a worker may take to import torch and initialise its device.
constexpr double kStartSeconds = 120;

}  // namespace

Evaluator::Evaluator(EvaluatorOptions options, BuilderPool& builds)
    : options_(std::move(options)), builds_(builds) {
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
    device_info_ = judge_->hello(kStartSeconds).at("device");
    zygote_->hello(kStartSeconds);
}

WorkerProcess& Evaluator::running(std::unique_ptr<WorkerProcess>& worker, const std::string& role) {
    if (!worker || !worker->alive()) {
        note("the " + role + " is gone; starting a new one");
        worker = std::make_unique<WorkerProcess>(options_.env, role);
    }
    worker->hello(kStartSeconds);
    return *worker;
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
    v.config = {{"mode", std::string(to_string(c.mode))},
                {"precision", std::string(to_string(c.precision))},
                {"trials", c.trials},
                {"seed", c.seed},
                {"device", c.device},
                {"device_name", device_name},
                {"atol", c.atol()},
                {"rtol", c.rtol()}};
    v.correctness.trials = c.trials;
    return v;
}

Verdict Evaluator::blank_verdict(const ProblemSpec& problem, const CandidateSpec& candidate) {
    return make_verdict(options_.config, problem, candidate, device_name());
}

namespace {

// One line on why a reference cannot be loaded, naming the Hugging Face model when that is it.
std::string reference_failure_reason(const std::string& code, const std::string& error) {
    std::string last = last_line(error);
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

Verdict Evaluator::evaluate(const ProblemSpec& problem, const CandidateSpec& candidate) {
    std::string failure;
    for (int attempt = 0; attempt < 2; ++attempt) {
        try {
            return evaluate_once(problem, candidate);
        } catch (const ReferenceError& e) {
            if (!options_.reference_failures_are_verdicts) throw;
            Verdict v = blank_verdict(problem, candidate);
            v.status = Status::load_error;
            v.reason = reference_failure_reason(problem.code, e.what());
            v.log = capped(e.what(), 16000);
            return v;
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
    // Twice with this candidate, and fresh workers have started since: say so, since a
    // candidate that signals or kills other processes looks exactly like this.
    Verdict v = blank_verdict(problem, candidate);
    v.status = Status::infra_error;
    v.reason = capped(failure, 2000) +
               " (twice while this candidate was evaluated, with fresh workers each time; the "
               "workers restarted cleanly afterwards, so the candidate itself may cause it)";
    return v;
}

json Evaluator::judge_call(const json& request, double timeout_s) {
    json reply = judge().request(request, timeout_s);
    if (reply.value("ok", false)) return reply;
    std::string error = reply.value("error", std::string("?"));
    if (reply.value("fault", std::string()) == "reference")
        throw ReferenceError("the reference program failed: " + last_line(error) + "\n" + error,
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
    build::BuildRecord record = builds_.build(candidate, build_s);
    v.phases_s["build"] = build_s;
    if (record.status == "compile_error" || record.status == "timeout") {
        v.status = record.status == "timeout" ? Status::timeout : Status::compile_error;
        v.reason = record.status == "timeout" ? last_line(record.log)
                                              : "compile error: " + first_error_line(record.log);
        v.log = capped(record.log, 16000);
        return v;
    }
    const CheckConfig& c = options_.config;
    json prepared = judge_call(
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
    // Inputs of their own for every timed call need a get_inputs() that the seed alone decides
    // and that is quick enough to run before every call (a giant input made on a CPU is not).
    constexpr double kFreshInputsSecondsMax = 0.5;
    bool deterministic = prepared.value("inputs_deterministic", false);
    double seconds = prepared.value("inputs_seconds", 1e9);
    fresh_inputs_ = deterministic && seconds < kFreshInputsSecondsMax;
    detail(std::string("  reference inputs: ") +
           (deterministic ? "decided by the seed" : "not decided by the seed") + ", made in " +
           seconds_text(seconds));
    run_candidate(problem, candidate, v);
    return v;
}

void Evaluator::run_candidate(const ProblemSpec& problem, const CandidateSpec& candidate,
                              Verdict& v) {
    const CheckConfig& c = options_.config;
    fs::path scratch = options_.scratch_dir / ("sandbox-" + std::to_string(++sandbox_count_));
    fs::create_directories(scratch);
    fs::path file = scratch / candidate.path.filename();
    write_file_atomic(file, candidate.code);
    json env = builds_.sandbox_env(builds_.key(candidate));
    env["TMPDIR"] = scratch.string();
    env["HF_HUB_OFFLINE"] = "1";  // no downloads from inside a sandbox
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

    if (!check_correctness(sandbox, v)) return;
    if (!c.measure) {
        v.status = Status::correct;
        sandbox.finish();
        return;
    }
    time_candidate(sandbox, v);
}

// Every trial, each on fresh shared copies of its inputs. False when the verdict is decided.
bool Evaluator::check_correctness(SandboxProcess& sandbox, Verdict& v) {
    const CheckConfig& c = options_.config;
    const bool strict = c.mode == Mode::strict;
    sandbox::Channel::Reply reply;
    // Correctness: every trial, each on fresh shared copies of its inputs.
    auto correctness_start = Clock::now();
    auto deadline =
        correctness_start + std::chrono::milliseconds(long(c.limits.correctness_s * 1000));
    std::string first_failure;
    for (int t = 0; t < c.trials; ++t) {
        json stage = judge_call({{"op", "stage"}, {"trial", t}}, 600);
        if (t == 0) trial_bytes_ = stage.value("bytes", std::size_t(0));
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
            return false;
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
        return false;
    }
    return true;
}

// The judge's check of the last timed call; on failure the verdict says why and stages go.
bool Evaluator::last_call_passes(const json& stage, const json& report, Verdict& v) {
    json recheck = judge_call({{"op", "compare"},
                               {"stage", stage},
                               {"report", report},
                               {"check_inputs", true},
                               {"where", "the last timed call"}},
                              600);
    if (recheck.value("passed", false)) return true;
    judge_call({{"op", "drop_stages"}}, 120);
    v.status = Status::incorrect;
    v.reason = recheck.value("reason", std::string()) + " (outputs of timed calls are checked too)";
    return false;
}

// The candidate in its sandbox, the last timed call's output checked again, then the baseline
// in the judge, which never loads candidate code. Strict: every timed call on inputs of its own
// seed, secret until then, so that no output can be remembered and replayed; the reference
// harness's mode: calls on the base seed's inputs, as it does.
void Evaluator::time_candidate(SandboxProcess& sandbox, Verdict& v) {
    const CheckConfig& c = options_.config;
    const bool strict = c.mode == Mode::strict;
    // Strict timing gives every call inputs of its own where it can (see evaluate_once), else
    // calls rotate over the judge's input sets.
    const bool fresh = strict && fresh_inputs_;
    auto timing_start = Clock::now();
    // The baseline's inputs rotate over up to three trials, as many as fit in an eighth of the
    // memory.
    std::vector<int> set_trials;
    std::size_t budget = device_info_.value("memory_bytes", std::size_t(0)) / 8;
    json sets = json::array(), stages = json::array();
    if (strict) {
        int wanted = std::min(c.trials, 3);
        if (trial_bytes_ > 0 && budget > 0)
            wanted = std::clamp(int(budget / trial_bytes_), 1, wanted);
        for (int t = 0; t < wanted; ++t) {
            set_trials.push_back(t);
            if (fresh) continue;  // the sandbox makes its own inputs
            json stage = judge_call({{"op", "stage"}, {"trial", t}}, 600);
            sets.push_back({{"inputs", stage.at("inputs")}, {"outputs", stage.at("outputs")}});
            stages.push_back(stage.at("stage"));
        }
    } else {
        // KernelBench times on the base seed's inputs.
        json stage = judge_call({{"op", "stage"}, {"trial", -1}}, 600);
        sets.push_back({{"inputs", stage.at("inputs")}, {"outputs", stage.at("outputs")}});
        set_trials.push_back(-1);
    }
    json request = {{"op", "time"}, {"sets", sets}, {"timing", c.timing.to_json()}};
    if (fresh) {
        std::random_device entropy;
        request["fresh_seed"] = (std::uint64_t(entropy()) << 32 | entropy()) >> 1;
        detail("  timing on fresh inputs for every call");
    } else {
        detail("  timing over " + std::to_string(set_trials.size()) + " input set(s)");
    }
    auto reply = sandbox.call(request, c.limits.timing_s);
    if (!accept(reply, sandbox, "timing", c.limits.timing_s, v)) {
        judge_call({{"op", "drop_stages"}}, 120);
        return;
    }
    if (fresh) {
        // The judge's inputs and reference for the last call's seed; the sandbox's own inputs
        // and output of that call go into the judge's buffers.
        constexpr int kLastTimedCall = 1000;
        json stage = judge_call(
            {{"op", "stage"}, {"trial", kLastTimedCall}, {"seed", reply.body.at("last_seed")}},
            600);
        auto last = sandbox.call({{"op", "report_last"},
                                  {"inputs", stage.at("inputs")},
                                  {"outputs", stage.at("outputs")}},
                                 c.limits.timing_s);
        if (!accept(last, sandbox, "timing", c.limits.timing_s, v)) {
            judge_call({{"op", "drop_stages"}}, 120);
            return;
        }
        sandbox.finish();
        if (!last_call_passes(stage.at("stage"), last.body.at("report"), v)) return;
    } else {
        sandbox.finish();
        std::size_t last_set = reply.body.value("last_set", std::size_t(0));
        if (strict && !last_call_passes(stages.at(last_set), reply.body.at("report"), v)) return;
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
