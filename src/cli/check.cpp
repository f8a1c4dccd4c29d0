// kbench check REF.py CAND.py [CAND.py ...]: one verdict per candidate.
#include <iostream>
#include <memory>

#include "build/toolchain.hpp"
#include "cli/commands.hpp"
#include "cli/run_options.hpp"
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
    bool json = false;
    bool keep_scratch = false;
    RunOptions run;
};

int run_check(const CheckOptions& o) {
    schedule::DeviceChoice device = schedule::parse_device(o.device);
    if (o.run.backend != "auto" && o.run.backend != "cpu" && device.kind == "cpu")
        throw UsageError("backend " + o.run.backend + " needs a GPU, but the device is cpu",
                         "use --device cuda, or --backend cpu for CPU candidates");
    CheckConfig config = make_config(o.run, device.label);

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
        c.backend = detect_backend(o.run.backend, c.code, device.kind);
        candidates.push_back(std::move(c));
    }

    auto log = make_logger(o.run);
    fs::path scratch;
    schedule::EvaluatorOptions options = make_evaluator_options(
        config, build::find_python(o.run.python), device, "kbench-check-", scratch);
    options.log = log;
    options.verbose = o.run.verbose && !o.run.quiet;
    if (o.run.gpu_peaks) options.gpu_peaks = fs::absolute(*o.run.gpu_peaks);

    std::unique_ptr<report::Reporter> reporter;
    if (o.json)
        reporter = std::make_unique<report::JsonLinesReporter>(std::cout);
    else
        reporter = std::make_unique<report::TextReporter>(std::cout);

    int exit_code = 0;
    bool keep = o.keep_scratch;
    {
        if (log) log("starting the judge and the zygote (" + device.label + ")");
        schedule::BuilderPool builds(
            make_builder_options(o.run, options.env, options.policy, scratch / "work", log));
        schedule::Evaluator evaluator(options, builds);
        builds.wait_ready();
        builds.set_cuda_architectures({evaluator.device_info().value("capability", std::string())});
        builds.prebuild(candidates);
        for (const auto& c : candidates) {
            if (log) log("checking " + c.path.string());
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
    cmd->add_flag("--json", o->json, "One JSON verdict a line");
    cmd->add_flag("--keep-scratch", o->keep_scratch, "Keep sandbox folders and worker logs");
    add_run_options(cmd, o->run);
    return [o] { return run_check(*o); };
}

}  // namespace kbench::cli
