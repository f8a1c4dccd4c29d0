// kbench dataset list|show|audit: the problems a dataset holds, and how well their references
// hold up at their own precision.
#include <fmt/format.h>

#include <iostream>
#include <set>

#include <nlohmann/json.hpp>

#include "build/toolchain.hpp"
#include "cli/commands.hpp"
#include "cli/run_options.hpp"
#include "cli/selection_options.hpp"
#include "core/error.hpp"
#include "core/fields.hpp"
#include "core/files.hpp"
#include "core/memory_plan.hpp"
#include "core/sha256.hpp"
#include "integrity/health.hpp"
#include "orchestrator/devices/devices.hpp"
#include "orchestrator/engine/eval_engine.hpp"
#include "orchestrator/engine/evaluator.hpp"

namespace kbench::cli {
namespace {

struct DatasetOptions {
    SelectionOptions selection;
    std::optional<std::string> python;
    bool json = false;
    std::string problem;              // for show
    std::vector<std::string> listed;  // for list: only these (LEVEL/ID or names)
    // audit
    std::string device = "auto";
    std::string precision = "fp32";
    std::string tf32;
    std::optional<double> tolerance;
    int trials = 2;
    int seeds = 5;
};

// Each selected problem's reference at its working precision against the same reference at
// the arbiter's precision (float64 for fp32): a problem whose own result misses that by more
// than the tolerance is ill-conditioned there, and an exact candidate can still miss its
// reference (strict mode's arbitration takes care of it; the reference harness does not).
int audit_problems(const DatasetOptions& o) {
    std::string python = build::find_python(o.python);
    auto problems = selected_problems(o.selection, python);
    orchestrator::DeviceChoice device = orchestrator::parse_device(o.device);
    RunOptions run;
    run.precision = o.precision;
    run.tf32 = o.tf32;
    run.tolerance = o.tolerance;
    run.no_timing = true;
    run.python = o.python;
    // The judge arbitrates KernelBench's first `trials` trials and checks health over `seeds`.
    run.trials = std::max({o.trials, o.seeds, 1});
    CheckConfig config = make_config(run, device.label);
    fs::path scratch;
    orchestrator::EvaluatorOptions options =
        make_evaluator_options(config, python, device, "kbench-audit-", scratch);
    auto log = make_logger(run);
    options.log = log;
    int flagged = 0, skipped = 0, failed = 0, unhealthy = 0;
    integrity::HealthStore store = integrity::HealthStore::in_cache();
    {
        if (log) log("starting the judge (" + device.label + ")");
        orchestrator::BuilderPool builds(
            make_builder_options(run, options.env, options.policy, scratch / "work", log));
        orchestrator::Evaluator evaluator(options, builds);
        if (!o.json)
            std::cout << fmt::format("{:<8} {:<48} {:>10} {:>11} {:>11}  {}\n", "problem", "name",
                                     "needs", "max |diff|", "mismatched", "verdict");
        std::size_t done = 0;
        for (const auto& p : problems) {
            ++done;
            if (log) log(fmt::format("[{}/{}] auditing {}", done, problems.size(), p.label()));
            nlohmann::json row = {{"level", p.level},
                                  {"problem_id", p.id},
                                  {"name", p.name},
                                  {"precision", o.precision},
                                  {"tf32", to_string(config.tf32)},
                                  {"atol", config.atol()},
                                  {"rtol", config.rtol()}};
            std::string verdict;
            std::string label = std::to_string(p.level) + "/" + std::to_string(p.id);
            try {
                protocol::Audited a = evaluator.audit(orchestrator::problem_spec(p), o.trials);
                row.update(a.to_json());
                // What an evaluation of it needs on the device (with rounds: the reference's
                // own sandbox too), kept with its health (the judge's measurement).
                std::string needs = "-";
                if (const auto& audited = evaluator.memory_plan()) {
                    MemoryPlan plan = plan_memory(audited->problem, audited->device, true);
                    row["memory"] = plan.to_json();
                    a.health["memory"] = {{"device", evaluator.device_name()},
                                          {"problem", plan.problem.to_json()},
                                          {"needs", plan.total()}};
                    needs = bytes_text(plan.total());
                }
                store.save(sha256_hex(p.code), config.precision, a.health);
                std::vector<std::string> flags = integrity::health_flags(a.health);
                if (!flags.empty()) ++unhealthy;
                if (!a.skipped.empty()) {
                    verdict = "skipped: " + a.skipped;
                    ++skipped;
                } else if (a.mismatched > 0) {
                    verdict = "ill-conditioned: an exact candidate can miss this reference";
                    ++flagged;
                } else {
                    verdict = "ok";
                }
                if (!flags.empty()) {
                    std::string names;
                    for (const auto& f : flags) names += (names.empty() ? "" : ", ") + f;
                    verdict += "; flagged: " + names;
                }
                row["verdict"] =
                    a.skipped.empty() ? (a.mismatched ? "ill_conditioned" : "ok") : "skipped";
                if (!o.json)
                    std::cout << fmt::format("{:<8} {:<48} {:>10} {:>11.3g} {:>11} {}\n", label,
                                             p.name.substr(0, 48), needs, a.max_abs_diff,
                                             fmt::format("{}/{}", a.mismatched, a.values), verdict);
            } catch (const orchestrator::ProblemTooLarge& e) {  // said, and not a failure
                row["verdict"] = "does_not_fit";
                row["memory"] = e.plan().to_json();
                row["error"] = e.what();
                if (!o.json)
                    std::cout << fmt::format("{:<8} {:<48} {:>10} {:>11} {:>11} does not fit: {}\n",
                                             label, p.name.substr(0, 48),
                                             bytes_text(e.plan().total()), "-", "-",
                                             e.plan().needs_text());
            } catch (const std::exception& e) {  // this problem's, not the audit's
                ++failed;
                row["verdict"] = "reference_failed";
                row["error"] = e.what();
                if (!o.json)
                    std::cout << fmt::format(
                        "{:<8} {:<48} {:>10} {:>11} {:>11} reference failed: {}\n", label,
                        p.name.substr(0, 48), "-", "-", "-", std::string(e.what()).substr(0, 200));
            }
            if (o.json) std::cout << dump_text(row) << std::endl;
        }
    }
    std::error_code ignored;
    fs::remove_all(scratch, ignored);
    if (!o.json)
        std::cout << fmt::format(
            "{} problem(s): {} ill-conditioned at {} (atol = rtol = {:g}), {} flagged by the "
            "health checks (recorded in {}: later verdicts carry the flags), {} not auditable, "
            "{} whose reference failed\n",
            problems.size(), flagged, o.precision, config.atol(), unhealthy,
            (cache_root() / "health").string(), skipped, failed);
    return failed > 0 ? 1 : 0;
}

int list_problems(const DatasetOptions& o) {
    for (const auto& name : o.listed) dataset::parse_problem_name(name);
    auto problems = selected_problems(o.selection, build::find_python(o.python));
    if (!o.listed.empty()) {
        // Only the named problems, in the dataset's order; each must exist.
        std::set<const dataset::Problem*> named;
        const std::string spec = dataset_spec(o.selection);
        for (const auto& name : o.listed)
            named.insert(&dataset::find_problem(problems, name, spec));
        std::vector<dataset::Problem> kept;
        for (const auto& p : problems)
            if (named.count(&p)) kept.push_back(p);
        problems = std::move(kept);
    }
    for (const auto& p : problems) {
        if (o.json) {
            std::cout << nlohmann::json{{"level", p.level},
                                        {"problem_id", p.id},
                                        {"name", p.name},
                                        {"sha256", p.sha256},
                                        {"source", p.source}}
                             .dump()
                      << "\n";
        } else {
            std::cout << fmt::format("level {}  {:>4}  {:<48} {}\n", p.level, p.id, p.name,
                                     p.sha256.substr(0, 12));
        }
    }
    if (!o.json)
        std::cout << problems.size() << " problem(s) in " << dataset_spec(o.selection) << "\n";
    return 0;
}

int show_problem(const DatasetOptions& o) {
    // A malformed name is refused before the dataset is read.
    dataset::parse_problem_name(o.problem);
    auto problems = selected_problems(o.selection, build::find_python(o.python));
    const std::string spec = dataset_spec(o.selection);
    const dataset::Problem& p = dataset::find_problem(problems, o.problem, spec);
    std::cout << "# " << p.label() << "  sha256 " << p.sha256 << "\n# " << p.source << "\n"
              << p.code << (p.code.ends_with("\n") ? "" : "\n");
    return 0;
}

}  // namespace

Command add_dataset_command(CLI::App& app) {
    auto o = std::make_shared<DatasetOptions>();
    CLI::App* cmd = app.add_subcommand("dataset", "List or show the problems of a dataset");
    cmd->require_subcommand(1);
    CLI::App* list = cmd->add_subcommand("list", "One line a problem: level, id, name, hash");
    list->add_option("problem", o->listed, "Only these: LEVEL/ID (1/19) or names (19_ReLU)");
    add_selection_options(list, o->selection);
    list->add_option("--python", o->python, "Python for Parquet files");
    list->add_flag("--json", o->json, "One JSON object a line");
    CLI::App* show = cmd->add_subcommand("show", "A problem's reference program");
    show->add_option("problem", o->problem, "LEVEL/ID, or a name")->required();
    add_selection_options(show, o->selection);
    show->add_option("--python", o->python, "Python for Parquet files");
    CLI::App* audit = cmd->add_subcommand(
        "audit",
        "Each reference against itself computed in float64 (fp32 for fp16/bf16): flags "
        "ill-conditioned problems, where an exact candidate can miss the reference");
    add_selection_options(audit, o->selection);
    add_reference_options(audit, o->device, o->precision, o->tf32);
    audit->add_option("--tol", o->tolerance, "atol = rtol (default: the precision's)");
    audit
        ->add_option("--seeds", o->seeds,
                     "KernelBench trial seeds the health checks run the reference on")
        ->capture_default_str();
    audit->add_option("--trials", o->trials, "KernelBench trial inputs to arbitrate on")
        ->capture_default_str();
    audit->add_option("--python", o->python,
                      "Python with torch (default: $KBENCH_PYTHON, python3)");
    audit->add_flag("--json", o->json, "One JSON object a problem");
    return [o, list, audit] {
        if (list->parsed()) return list_problems(*o);
        if (audit->parsed()) return audit_problems(*o);
        return show_problem(*o);
    };
}

}  // namespace kbench::cli
