#include "cli/run_options.hpp"

#include <chrono>
#include <cstdlib>
#include <iomanip>
#include <iostream>
#include <regex>
#include <sstream>

#include "build/toolchain.hpp"
#include "core/error.hpp"
#include "core/files.hpp"
#include "core/memory_plan.hpp"
#include "core/settings.hpp"
#include "integrity/rules.hpp"
#include "orchestrator/devices/devices.hpp"
#include "report/progress.hpp"

namespace kbench::cli {

void add_quiet_flag(CLI::App* cmd, bool& quiet) {
    cmd->add_flag("-q,--quiet", quiet, "No progress lines on stderr");
}

void add_cache_dir_option(CLI::App* cmd, std::optional<std::string>& cache_dir) {
    cmd->add_option("--cache-dir", cache_dir, "Build cache (default: ~/.cache/kbench/builds)");
}

fs::path build_cache_dir(const std::optional<std::string>& cache_dir) {
    return fs::absolute(cache_dir ? fs::path(*cache_dir) : cache_root() / "builds");
}

void add_run_options(CLI::App* cmd, RunOptions& o) {
    cmd->add_option("--precision", o.precision, "fp32, fp16 or bf16")->capture_default_str();
    cmd->add_option("--trials", o.trials, "Correctness trials, each on fresh inputs")
        ->capture_default_str();
    cmd->add_option("--seed", o.seed, "Base seed")->capture_default_str();
    cmd->add_option("--mode", o.mode, "strict (every check) or kernelbench (the reference harness)")
        ->capture_default_str();
    cmd->add_option("--tf32", o.tf32,
                    "off (float32 at full precision: strict's default), on (TF32 allowed, "
                    "tolerance 1e-2) or default (PyTorch's defaults: kernelbench's default)");
    cmd->add_option("--policy", o.policy,
                    "Integrity rules: strict (strict's default), kernelbench (kernelbench's "
                    "default: what the reference harness's static checker rejects) or "
                    "permissive (nothing rejected, every finding a warning); kbench rules lists "
                    "them");
    cmd->add_option("--allow", o.allow, "A rule that never rejects (repeatable)")
        ->allow_extra_args(false);
    cmd->add_option("--deny", o.deny, "A rule that always rejects (repeatable)")
        ->allow_extra_args(false);
    cmd->add_option("--backend", o.backend, "cuda, triton or cpu; default: from the source")
        ->capture_default_str();
    cmd->add_option("--tol", o.tolerance,
                    "atol = rtol (default: fp32 1e-4, fp16/bf16 and fp32 with --tf32 on 1e-2)");
    add_quiet_flag(cmd, o.quiet);
    cmd->add_flag("--verbose,-v", o.verbose, "A progress line per phase");
    cmd->add_flag("--no-timing", o.no_timing, "Check correctness only");
    cmd->add_option("--device-memory", o.device_memory_gib,
                    "GiB of device memory to evaluate within, as on a GPU that has that much "
                    "(24, 40, 80): every party (judge, both sandboxes) held to its share of "
                    "kbench's memory plan; a problem that needs more gets a load_error saying so")
        ->check(CLI::PositiveNumber);
    cmd->add_option("--python", o.python, "Python with torch (default: $KBENCH_PYTHON, python3)");
    cmd->add_option("--gpu-peaks", o.gpu_peaks,
                    "A GPU table of your own (the schema of data/gpus.json), ahead of kbench's")
        ->check(CLI::ExistingFile);
    add_cache_dir_option(cmd, o.cache_dir);
    cmd->add_option("--builders", o.builders,
                    "Concurrent builds (default: one a core; on GPUs one for every two cores, "
                    "each compiling its host and device code side by side)");
    cmd->add_flag("--no-build-support", o.no_build_support,
                  "Build extensions exactly as written, without kbench's precompiled "
                  "torch/extension.h and lighter header for CUDA files");
    cmd->add_option("--timeout-build", o.limits.build_s, "Seconds")->capture_default_str();
    cmd->add_option("--timeout-load", o.limits.load_s, "Seconds")->capture_default_str();
    cmd->add_option("--timeout-correctness", o.limits.correctness_s, "Seconds")
        ->capture_default_str();
    cmd->add_option("--timeout-timing", o.limits.timing_s, "Seconds")->capture_default_str();
    cmd->add_option("--call-factor", o.limits.call_factor,
                    "A request of model calls may take this many times the reference's own time "
                    "(0: only the phase limits)")
        ->capture_default_str();
    cmd->add_option("--call-floor", o.limits.call_floor_s,
                    "Seconds a request of model calls may always take")
        ->capture_default_str();
    cmd->add_option("--timeout-first-call", o.limits.first_call_s,
                    "Seconds a sandbox's first call may take while it compiles (Triton, lazy "
                    "loading)")
        ->capture_default_str();
    cmd->add_option("--min-samples", o.timing.min_samples, "Timing samples at least")
        ->capture_default_str();
    cmd->add_option("--max-samples", o.timing.max_samples, "Timing samples at most")
        ->capture_default_str();
    cmd->add_option("--max-seconds", o.timing.max_seconds, "Seconds of sampling at most")
        ->capture_default_str();
    // Two flags, not one with a negation, so that help shows the default as it is.
    auto* rounds = cmd->add_flag_callback(
        "--rounds", [&o] { o.timing.alternate = true; },
        "Time the baseline in rounds, its requests served by a sandbox of the reference's own "
        "and alternating with the candidate's, the speedup's interval over rounds (the default)");
    cmd->add_flag_callback(
           "--no-rounds", [&o] { o.timing.alternate = false; },
           "Time the baseline apart, in the judge, not in rounds")
        ->excludes(rounds);
    cmd->add_option("--rounds-systematic", o.timing.rounds_systematic,
                    "With rounds: the relative standard deviation between two sandboxes of the "
                    "same code that rounds cannot average out, added to the speedup's interval")
        ->check(CLI::Range(0.0, 0.5))
        ->capture_default_str();
    cmd->add_option("--stop-below", o.timing.stop_below,
                    "With rounds: stop sampling once the speedup's whole interval lies below "
                    "this (after the rounds at least; its interval as wide as they leave it); 0: "
                    "never")
        ->check(CLI::Range(0.0, 1.0))
        ->capture_default_str();
    cmd->add_option("--target-ci", o.timing.target_rel_halfwidth,
                    "Stop when the 95% interval's relative half-width is under this fraction (the "
                    "median's; the speedup's over rounds with --rounds)")
        ->capture_default_str();
}

CheckConfig make_config(const RunOptions& o, const std::string& device_label) {
    if (o.trials < 1) throw UsageError("--trials must be at least 1");
    CheckConfig config;
    config.mode = parse_mode(o.mode);
    config.precision = parse_precision(o.precision);
    config.tf32 = parse_tf32(o.tf32, config.mode);
    config.policy = o.policy.empty() ? std::string(to_string(config.mode)) : o.policy;
    integrity::RulePolicy rules = integrity::RulePolicy::make(config.policy, o.allow, o.deny);
    config.allow.assign(rules.allow.begin(), rules.allow.end());  // sorted, once each
    config.deny.assign(rules.deny.begin(), rules.deny.end());
    config.trials = o.trials;
    config.seed = o.seed;
    config.device = device_label;
    config.tolerance = o.tolerance;
    config.limits = o.limits;
    config.timing = o.timing;
    config.timing.protocol = config.mode;
    config.measure = !o.no_timing;
    if (o.device_memory_gib) {
        if (device_label == "cpu")
            throw UsageError("--device-memory is for GPUs: the CPU's memory is not planned");
        config.device_memory = std::uint64_t(*o.device_memory_gib * double(kGiB));
    }
    return config;
}

std::function<void(const std::string&)> make_logger(const RunOptions& o) {
    if (o.quiet) return {};
    auto start = std::chrono::steady_clock::now();
    return [start](const std::string& line) {
        double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        std::ostringstream text;
        text << "kbench [" << std::fixed << std::setprecision(1) << t << " s] " << line;
        report::print_line(std::cerr, text.str());  // above the status line, if one is drawn
    };
}

orchestrator::BuilderOptions make_builder_options(const RunOptions& o,
                                                  const orchestrator::WorkerEnvironment& env,
                                                  const orchestrator::SandboxPolicy& policy,
                                                  const fs::path& scratch,
                                                  std::function<void(const std::string&)> log) {
    orchestrator::BuilderOptions b;
    b.env = env;
    b.policy = policy;
    // Absolute: workers run in private folders of their own.
    b.cache_dir = build_cache_dir(o.cache_dir);
    b.scratch_dir = fs::absolute(scratch);
    require_free_space(b.cache_dir, "the build cache", "--cache-dir or KBENCH_CACHE");
    require_free_space(b.scratch_dir, "kbench's scratch folder", "TMPDIR");
    // Build supports are large (a precompiled header at three levels) and do not depend on the
    // cache: caches may share one folder of them.
    if (std::optional<std::string> dir = setting("KBENCH_SUPPORT_DIR"))
        b.support_dir = fs::absolute(*dir);
    b.precision = parse_precision(o.precision);
    b.limit_s = o.limits.build_s;
    b.builders = o.builders;
    // On the CPU a precompiled header saved nothing (the 13 CPU candidates of the suite built in
    // 109-117 s with it, 113 s without, on 2 cores) and cost a minute or more and 2.2 GB on first
    // use: it is made for GPUs only (bench/2026-12-06-cpu2/build-support/).
    b.build_support = !o.no_build_support && env.device_kind != DeviceKind::cpu;
    b.log = std::move(log);
    b.verbose = o.verbose && !o.quiet;
    // The policy alone: the rest of a configuration (--device-memory, say) is the device's.
    b.rules = integrity::RulePolicy::make(
        o.policy.empty() ? std::string(to_string(parse_mode(o.mode))) : o.policy, o.allow, o.deny);
    return b;
}

fs::path make_scratch(const std::string& prefix, const orchestrator::SandboxPolicy& policy) {
    fs::path scratch = fs::absolute(make_temp_dir(prefix));
    if (policy.uid >= 0)
        fs::permissions(scratch,
                        fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec);
    return scratch;
}

orchestrator::EngineOptions make_engine_options(const RunOptions& o, const CheckConfig& config,
                                                const std::string& python, DeviceKind device_kind,
                                                const std::vector<std::string>& gpus,
                                                int cpu_judges, const std::string& scratch_prefix,
                                                const fs::path& log_dir, fs::path& scratch,
                                                std::function<void(const std::string&)> log) {
    orchestrator::EngineOptions e;
    e.config = config;
    e.env.python = python;
    e.policy = orchestrator::SandboxPolicy::decide(python);
    scratch = make_scratch(scratch_prefix, e.policy);
    e.policy.private_root = scratch.string();
    e.env.worker_package_dir = build::worker_package_dir();
    e.env.device_kind = device_kind;
    e.env.log_dir = log_dir.empty() ? scratch / "logs" : log_dir;
    e.gpus = gpus;
    e.cpu_judges = cpu_judges;
    e.builds = make_builder_options(o, e.env, e.policy, scratch / "work",
                                    o.verbose && !o.quiet ? log : nullptr);
    if (!o.quiet) e.builds.notice = log;
    e.scratch_dir = scratch / "work";
    e.log = std::move(log);
    e.verbose = o.verbose && !o.quiet;
    if (o.gpu_peaks) e.gpu_peaks = fs::absolute(*o.gpu_peaks);
    return e;
}

orchestrator::EvaluatorOptions make_evaluator_options(const CheckConfig& config,
                                                      const std::string& python,
                                                      const orchestrator::DeviceChoice& device,
                                                      const std::string& scratch_prefix,
                                                      fs::path& scratch) {
    orchestrator::EvaluatorOptions options;
    options.config = config;
    options.env.python = python;
    options.policy = orchestrator::SandboxPolicy::decide(python);
    scratch = make_scratch(scratch_prefix, options.policy);
    options.policy.private_root = scratch.string();
    options.env.worker_package_dir = build::worker_package_dir();
    options.env.device_kind = device.kind;
    if (device.kind == DeviceKind::cuda)
        options.env.visible_gpu = orchestrator::physical_gpu(device.ordinal);
    options.env.log_dir = scratch / "logs";
    options.scratch_dir = scratch / "work";
    return options;
}

int exit_code(const std::vector<Verdict>& verdicts, bool failures_without_verdicts) {
    bool harness = false, wrong = failures_without_verdicts;
    for (const auto& v : verdicts) {
        if (v.blame != Blame::candidate)
            harness = true;
        else if (v.status != Status::correct)
            wrong = true;
    }
    return harness ? 2 : wrong ? 1 : 0;
}

CLI::Validator at_least_one() {
    return CLI::Validator(
        [](std::string& text) -> std::string {
            try {
                std::size_t used = 0;
                long value = std::stol(text, &used);
                if (used == text.size() && value >= 1) return {};
            } catch (const std::exception&) {
            }
            return "must be a whole number, 1 or more (got '" + text + "')";
        },
        "INT>=1");
}

namespace {

// The physical GPUs of --gpus, checked against what is visible.
std::vector<std::string> gpu_ids(const std::string& spec, bool asked_for_cuda) {
    int count = orchestrator::count_gpus();
    std::vector<std::string> ids;
    if (spec == "all") {
        for (int i = 0; i < count; ++i) ids.push_back(orchestrator::physical_gpu(i));
        return ids;
    }
    if (count == 0)
        throw UsageError("--gpus " + spec + ": no GPU is visible on this machine",
                         asked_for_cuda ? "check nvidia-smi, or use --device cpu"
                                        : "use --device cpu, or check nvidia-smi");
    std::stringstream in(spec);
    for (std::string id; std::getline(in, id, ',');) {
        if (id.empty()) continue;
        if (!std::regex_match(id, std::regex(R"(\d+)")) || std::stoi(id) >= count)
            throw UsageError("--gpus " + spec + ": '" + id + "' is not a GPU here",
                             "this machine has " + std::to_string(count) +
                                 " GPU(s): use ordinals from 0 to " + std::to_string(count - 1) +
                                 ", or all");
        ids.push_back(orchestrator::physical_gpu(std::stoi(id)));
    }
    return ids;
}

}  // namespace

DeviceSelection select_devices(const std::string& device, const std::string& gpus_spec,
                               int cpu_judges) {
    bool cpu = device == "cpu";
    std::vector<std::string> gpus;
    if (!cpu) {
        if (device != "auto" && device.rfind("cuda", 0) != 0)
            throw UsageError("unknown device '" + device + "'", "use auto, cpu or cuda");
        gpus = gpu_ids(gpus_spec, device != "auto");
        if (gpus.empty()) {
            if (device != "auto")
                throw UsageError("no GPU is visible", "use --device cpu, or check nvidia-smi");
            cpu = true;
        }
    } else if (gpus_spec != "all") {
        throw UsageError("--gpus is for evaluations on GPUs, and the device is cpu",
                         "leave --gpus out, or use --device cuda");
    }
    if (!cpu && cpu_judges != 1)
        throw UsageError("--cpu-judges is for evaluations on the CPU",
                         "add --device cpu, or leave --cpu-judges out to use the GPUs");
    if (cpu && cpu_judges > 1) orchestrator::split_cores(orchestrator::usable_cores(), cpu_judges);
    return {cpu ? DeviceKind::cpu : DeviceKind::cuda, cpu ? std::vector<std::string>{} : gpus};
}

}  // namespace kbench::cli
