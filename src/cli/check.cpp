// kbench check REF.py CAND.py [CAND.py ...]: one verdict per candidate.
#include <iostream>
#include <memory>
#include <mutex>

#include "build/toolchain.hpp"
#include "cli/commands.hpp"
#include "cli/run_options.hpp"
#include "core/error.hpp"
#include "core/files.hpp"
#include "dataset/problem_file.hpp"
#include "orchestrator/devices/devices.hpp"
#include "orchestrator/engine/eval_engine.hpp"
#include "orchestrator/run/interruption.hpp"
#include "report/reporter.hpp"

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
    orchestrator::DeviceChoice device = orchestrator::parse_device(o.device);
    if (o.run.backend != "auto" && o.run.backend != "cpu" && device.kind == DeviceKind::cpu)
        throw UsageError("backend " + o.run.backend + " needs a GPU, but the device is cpu",
                         "use --device cuda, or --backend cpu for CPU candidates");
    CheckConfig config = make_config(o.run, device.label);

    auto identity = dataset::identify_problem_file(o.reference);
    dataset::Problem problem =
        dataset::make_problem(identity.level.value_or(0), identity.id.value_or(0), identity.name,
                              read_file(o.reference), fs::absolute(o.reference).string());
    std::vector<orchestrator::EvalItem> items;
    for (std::size_t i = 0; i < o.candidates.size(); ++i) {
        orchestrator::EvalItem item;
        item.problem = problem;
        item.candidate =
            dataset::make_candidate(problem.level, problem.id, int(i), read_file(o.candidates[i]),
                                    fs::absolute(o.candidates[i]));
        item.backend = detect_backend(o.run.backend, item.candidate.code, device.kind);
        item.unsampled = true;
        items.push_back(std::move(item));
    }

    auto log = make_logger(o.run);
    fs::path scratch;
    std::vector<std::string> gpus;
    if (device.kind == DeviceKind::cuda) gpus = {orchestrator::physical_gpu(device.ordinal)};
    orchestrator::EngineOptions e =
        make_engine_options(o.run, config, build::find_python(o.run.python), device.kind, gpus, 1,
                            "kbench-check-", fs::path(), scratch, log);
    e.builds.log = log;  // check names its builds, verbose or not

    report::Multiplexer out;
    if (o.json)
        out.add(std::make_unique<report::JsonLinesReporter>(std::cout));
    else
        out.add(std::make_unique<report::TextReporter>(std::cout));

    std::mutex record_mutex;
    std::vector<Verdict> verdicts;
    bool keep = o.keep_scratch;
    orchestrator::InterruptGuard guard([&](int, orchestrator::Origin) {
        std::lock_guard<std::mutex> hold(record_mutex);
        std::cerr << "kbench: interrupted after " << verdicts.size() << " of " << items.size()
                  << " verdict(s)\n";
        std::error_code ignored;
        if (!keep) fs::remove_all(scratch, ignored);
    });
    {
        if (log) log("starting the judge and the zygote (" + device.label + ")");
        orchestrator::EvalEngine engine(e);
        engine.run(
            items,
            [&](const orchestrator::EvalItem&, const Verdict& v, const std::string&) {
                std::lock_guard<std::mutex> hold(record_mutex);
                if (orchestrator::InterruptGuard::interrupted()) return;
                verdicts.push_back(v);
                out.verdict(v);
                if (v.status == Status::infra_error) keep = true;
            },
            [&](const orchestrator::EvalItem& item) {
                if (log) log("checking " + item.candidate.source);
            });
    }
    std::lock_guard<std::mutex> hold(record_mutex);
    for (const auto& v : verdicts)
        if (v.blame == Blame::reference) {
            std::cerr << "kbench: the reference " << o.reference
                      << " failed, so no candidate could be judged: " << v.reason << "\n"
                      << "  what to do: check it with the same Python and device (it needs Model, "
                         "get_inputs and get_init_inputs)\n";
            break;
        }
    if (keep) {
        std::cerr << "kbench: scratch and worker logs kept in " << scratch.string() << "\n";
    } else {
        std::error_code ignored;
        fs::remove_all(scratch, ignored);
    }
    return exit_code(verdicts);
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
    cmd->add_flag("--keep-scratch", o->keep_scratch,
                  "Keep the scratch folder with the workers' logs");
    add_run_options(cmd, o->run);
    return [o] { return run_check(*o); };
}

}  // namespace kbench::cli
