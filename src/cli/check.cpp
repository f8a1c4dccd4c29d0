// kbench check REF.py CAND.py [CAND.py ...]: one verdict per candidate.
#include <unistd.h>

#include <chrono>
#include <iomanip>
#include <iostream>
#include <memory>
#include <optional>

#include "build/toolchain.hpp"
#include "cli/commands.hpp"
#include "core/error.hpp"
#include "core/files.hpp"
#include "dataset/problem_file.hpp"
#include "report/reporter.hpp"
#include "schedule/devices.hpp"
#include "schedule/evaluator.hpp"

namespace kbench::cli {
namespace {

struct CheckOptions {
    std::string reference;
    std::vector<std::string> candidates;
    std::string device = "auto";
    std::string precision = "fp32";
    std::string mode = "strict";
    std::string backend = "auto";
    int trials = 5;
    std::uint64_t seed = 42;
    bool json = false;
    bool quiet = false;
    bool verbose = false;
    bool keep_scratch = false;
    bool no_timing = false;
    std::optional<double> tolerance;
    std::optional<std::string> python;
    std::optional<std::string> cache_dir;
    int builders = 0;
    PhaseLimits limits;
    TimingConfig timing;
};

Backend detect_backend(const std::string& option, const std::string& code,
                       const std::string& device_kind) {
    if (option != "auto") return parse_backend(option);
    if (device_kind == "cpu") return Backend::cpu;
    if (code.find("import triton") != std::string::npos ||
        code.find("from triton") != std::string::npos)
        return Backend::triton;
    return Backend::cuda;
}

int run_check(const CheckOptions& o) {
    schedule::DeviceChoice device = schedule::parse_device(o.device);
    if (o.backend != "auto" && o.backend != "cpu" && device.kind == "cpu")
        throw UsageError("backend " + o.backend + " needs a GPU, but the device is cpu",
                         "use --device cuda, or --backend cpu for CPU candidates");
    if (o.trials < 1) throw UsageError("--trials must be at least 1");

    CheckConfig config;
    config.mode = parse_mode(o.mode);
    config.precision = parse_precision(o.precision);
    config.trials = o.trials;
    config.seed = o.seed;
    config.device = device.label;
    config.tolerance = o.tolerance;
    config.limits = o.limits;
    config.timing = o.timing;
    config.timing.protocol = config.mode;
    config.measure = !o.no_timing;

    schedule::ProblemSpec problem;
    auto identity = dataset::identify_problem_file(o.reference);
    problem.name = identity.name;
    problem.level = identity.level;
    problem.id = identity.id;
    problem.code = read_file(o.reference);
    std::vector<schedule::CandidateSpec> candidates;
    for (const auto& path : o.candidates) {
        schedule::CandidateSpec c;
        c.path = fs::absolute(path);
        c.code = read_file(path);
        c.backend = detect_backend(o.backend, c.code, device.kind);
        candidates.push_back(std::move(c));
    }

    fs::path scratch = fs::absolute(make_temp_dir("kbench-check-"));
    schedule::EvaluatorOptions options;
    options.config = config;
    options.env.python = build::find_python(o.python);
    options.env.worker_package_dir = build::worker_package_dir();
    options.env.device_kind = device.kind;
    if (device.kind == "cuda") options.env.visible_gpu = schedule::physical_gpu(device.ordinal);
    options.env.log_dir = scratch / "logs";
    options.scratch_dir = scratch / "work";
    options.verbose = o.verbose && !o.quiet;
    if (!o.quiet) {
        auto start = std::chrono::steady_clock::now();
        options.log = [start](const std::string& line) {
            double t =
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
            std::cerr << "kbench [" << std::fixed << std::setprecision(1) << t << " s] " << line
                      << std::endl;
        };
    }

    std::unique_ptr<report::Reporter> reporter;
    if (o.json)
        reporter = std::make_unique<report::JsonLinesReporter>(std::cout);
    else
        reporter = std::make_unique<report::TextReporter>(std::cout);

    int exit_code = 0;
    bool keep = o.keep_scratch;
    {
        if (options.log) options.log("starting the judge and the zygote (" + device.label + ")");
        schedule::BuilderOptions build_options;
        build_options.env = options.env;
        // Absolute: workers run in private folders of their own.
        build_options.cache_dir =
            fs::absolute(o.cache_dir ? fs::path(*o.cache_dir) : cache_root() / "builds");
        build_options.scratch_dir = scratch / "work";
        build_options.precision = config.precision;
        build_options.limit_s = config.limits.build_s;
        build_options.builders = o.builders;
        build_options.log = options.log;
        build_options.verbose = options.verbose;
        schedule::BuilderPool builds(build_options);
        schedule::Evaluator evaluator(options, builds);
        builds.set_cuda_architectures({evaluator.device_info().value("capability", std::string())});
        builds.prebuild(candidates);
        for (const auto& c : candidates) {
            if (options.log) options.log("checking " + c.path.string());
            Verdict v = evaluator.evaluate(problem, c);
            reporter->verdict(v);
            if (v.status != Status::correct) exit_code = 1;
            if (v.status == Status::infra_error) keep = true;
        }
    }
    if (keep) {
        std::cerr << "kbench: scratch and worker logs kept in " << scratch.string() << "\n";
    } else {
        std::error_code ignored;
        fs::remove_all(scratch, ignored);
    }
    return exit_code;
}

}  // namespace

Command add_check_command(CLI::App& app) {
    auto o = std::make_shared<CheckOptions>();
    CLI::App* cmd = app.add_subcommand(
        "check", "Evaluate candidates against one reference program and print a verdict each");
    cmd->add_option("reference", o->reference,
                    "Reference program (Model, get_inputs, get_init_inputs)")
        ->required()
        ->check(CLI::ExistingFile);
    cmd->add_option("candidates", o->candidates, "Candidate programs (ModelNew)")
        ->required()
        ->check(CLI::ExistingFile);
    cmd->add_option("--device", o->device, "cpu, cuda or cuda:N; default: a GPU if present")
        ->capture_default_str();
    cmd->add_option("--precision", o->precision, "fp32, fp16 or bf16")->capture_default_str();
    cmd->add_option("--trials", o->trials, "Correctness trials, each on fresh inputs")
        ->capture_default_str();
    cmd->add_option("--seed", o->seed, "Base seed")->capture_default_str();
    cmd->add_option("--mode", o->mode,
                    "strict (every check) or kernelbench (the reference harness)")
        ->capture_default_str();
    cmd->add_option("--backend", o->backend, "cuda, triton or cpu; default: from the source")
        ->capture_default_str();
    cmd->add_option("--tol", o->tolerance, "atol = rtol (default: fp32 1e-4, fp16/bf16 1e-2)");
    cmd->add_flag("--json", o->json, "One JSON verdict a line");
    cmd->add_flag("--quiet,-q", o->quiet, "No progress lines on stderr");
    cmd->add_flag("--verbose,-v", o->verbose, "A progress line per phase");
    cmd->add_flag("--no-timing", o->no_timing, "Check correctness only");
    cmd->add_option("--python", o->python, "Python with torch (default: $KBENCH_PYTHON, python3)");
    cmd->add_option("--cache-dir", o->cache_dir, "Build cache (default: ~/.cache/kbench/builds)");
    cmd->add_option("--builders", o->builders, "Concurrent builds (default: one a core)");
    cmd->add_flag("--keep-scratch", o->keep_scratch, "Keep sandbox folders and worker logs");
    cmd->add_option("--timeout-build", o->limits.build_s, "Seconds")->capture_default_str();
    cmd->add_option("--timeout-load", o->limits.load_s, "Seconds")->capture_default_str();
    cmd->add_option("--timeout-correctness", o->limits.correctness_s, "Seconds")
        ->capture_default_str();
    cmd->add_option("--timeout-timing", o->limits.timing_s, "Seconds")->capture_default_str();
    cmd->add_option("--min-samples", o->timing.min_samples, "Timing samples at least")
        ->capture_default_str();
    cmd->add_option("--max-samples", o->timing.max_samples, "Timing samples at most")
        ->capture_default_str();
    cmd->add_option("--max-seconds", o->timing.max_seconds, "Seconds of sampling at most")
        ->capture_default_str();
    cmd->add_option("--target-ci", o->timing.target_rel_halfwidth,
                    "Stop when the median's 95% half-width is under this fraction")
        ->capture_default_str();
    return [o] { return run_check(*o); };
}

}  // namespace kbench::cli
