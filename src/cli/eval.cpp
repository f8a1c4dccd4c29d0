// kbench eval: candidates for many problems, on every device, resumable, scored.
#include <unistd.h>

#include <fstream>
#include <iostream>
#include <map>
#include <regex>
#include <set>

#include "build/toolchain.hpp"
#include "cli/commands.hpp"
#include "cli/run_options.hpp"
#include "cli/selection_options.hpp"
#include "core/error.hpp"
#include "core/files.hpp"
#include "dataset/candidate_set.hpp"
#include "dataset/problem_set.hpp"
#include "orchestrator/devices/devices.hpp"
#include "orchestrator/engine/eval_engine.hpp"
#include "orchestrator/run/eval_run.hpp"
#include "report/reporter.hpp"

namespace kbench::cli {
namespace {

struct EvalOptions {
    SelectionOptions selection;
    std::string candidates;  // default: the built-in candidates for the device
    std::string device = "auto";
    std::string gpus = "all";
    int cpu_judges = 1;
    std::string run_name;
    std::string runs_dir = "runs";
    std::optional<std::string> db;
    std::optional<std::string> kernelbench_baseline;
    bool force = false;
    bool exclude_flagged = false;
    bool json = false;
    RunOptions run;
};

std::string slug(const std::string& text) {
    std::string name = fs::path(text).filename().string();
    if (name.empty()) name = text;
    name = std::regex_replace(name, std::regex(R"(\.(jsonl|parquet)$)"), "");
    return std::regex_replace(name, std::regex(R"([^A-Za-z0-9_.-]+)"), "_");
}

// Selected problems no candidate answers, with why (the skipped files of that problem, or
// none at all).
std::vector<report::Unanswered> unanswered(const std::vector<dataset::Problem>& problems,
                                           const dataset::CandidateScan& scan) {
    std::set<std::pair<int, int>> answered;
    for (const auto& c : scan.candidates) answered.insert({c.level, c.problem_id});
    std::vector<report::Unanswered> out;
    for (const auto& p : problems) {
        if (answered.count({p.level, p.id})) continue;
        std::string why;
        for (const auto& s : scan.skipped)
            if (s.level == p.level && s.problem_id == p.id) {
                why = s.why;
                break;
            }
        out.push_back({p.level, p.id, p.name, why.empty() ? "missing" : why});
    }
    return out;
}

std::string no_candidates_message(const std::string& spec, const dataset::CandidateScan& scan,
                                  std::size_t problems) {
    std::string text = "no usable candidate in " + spec + " for the " + std::to_string(problems) +
                       " selected problem(s): found " + std::to_string(scan.found) +
                       " candidate file(s)";
    if (scan.found == 0) return text;
    std::map<std::string, int> whys;
    for (const auto& s : scan.skipped) ++whys[s.why.substr(0, s.why.find(" ("))];
    if (scan.outside_selection)
        whys["for problems outside the selection"] = int(scan.outside_selection);
    text += ", skipped";
    bool first = true;
    for (const auto& [why, n] : whys) {
        text += (first ? " " : "; ") + std::to_string(n) + " " + why;
        first = false;
    }
    return text;
}

int run_eval(const EvalOptions& o, const std::string& command_line) {
    std::string python = build::find_python(o.run.python);
    auto devices = select_devices(o.device, o.gpus, o.cpu_judges);
    const std::vector<std::string>& gpus = devices.gpus;
    const DeviceKind device_kind = devices.kind;
    const std::string device_name(to_string(device_kind));
    CheckConfig config = make_config(o.run, device_name);
    nlohmann::json kb_baseline;
    if (o.kernelbench_baseline) {
        try {
            kb_baseline = nlohmann::json::parse(read_file(*o.kernelbench_baseline));
        } catch (const std::exception& e) {
            throw UsageError(
                "cannot read the baseline file " + *o.kernelbench_baseline + ": " + e.what(),
                "give KernelBench's results/timing JSON ({\"level1\": {\"1_...py\": "
                "{\"mean\": ms}}})");
        }
    }
    auto log = make_logger(o.run);

    std::vector<dataset::Problem> dataset_problems;
    auto problems = selected_problems(o.selection, python, &dataset_problems);
    // A candidate is checked against the problem it was written for: candidates from elsewhere
    // name their problem set, since the built-in suite's numbers are not KernelBench's.
    if (o.selection.dataset.empty() && !o.candidates.empty() &&
        o.candidates.rfind("builtin:", 0) != 0)
        throw UsageError("--candidates " + o.candidates +
                             " without --dataset: they would be checked against kbench's "
                             "built-in suite, whose level and problem numbers name other "
                             "problems than KernelBench's",
                         "pass --dataset kernelbench for candidates written for KernelBench's "
                         "problems, --dataset builtin for ones written for the built-in suite, "
                         "or --dataset with the problem set they were written for");
    std::string candidate_spec = o.candidates.empty() ? "builtin:" + device_name : o.candidates;
    auto scan = dataset::scan_candidates(candidate_spec, problems, dataset_problems);
    for (const auto& s : scan.skipped)
        if (log) log("skipped " + s.source + ": " + s.why);
    if (scan.candidates.empty())
        throw UsageError(no_candidates_message(candidate_spec, scan, problems.size()),
                         "candidate files are named level_L_problem_P_sample_S_kernel.py (or "
                         "sit in a folder named after their problem)");
    auto missing = unanswered(problems, scan);
    for (const auto& u : missing)
        if (log)
            log("level " + std::to_string(u.level) + " problem " + std::to_string(u.id) + " (" +
                u.name + ") has no usable candidate (" + u.why + "): it counts as a failure");

    std::vector<orchestrator::EvalItem> items;
    for (const auto& c : scan.candidates) {
        orchestrator::EvalItem item;
        for (const auto& p : problems)
            if (p.level == c.level && p.id == c.problem_id) item.problem = p;
        item.candidate = c;
        item.backend = detect_backend(o.run.backend, c.code, device_kind);
        item.key = orchestrator::item_key(item.problem, c, item.backend, config);
        items.push_back(std::move(item));
    }

    std::string run_name = o.run_name.empty()
                               ? slug(dataset_spec(o.selection)) + "-" + slug(candidate_spec) +
                                     "-" + o.run.mode + "-" + o.run.precision + "-" + device_name
                               : o.run_name;
    CheckConfig settings = config;
    settings.device = device_name;  // a run's settings name the kind of device, not which
    orchestrator::EvalRun run(fs::absolute(fs::path(o.runs_dir) / run_name),
                              o.db ? std::optional<fs::path>(fs::path(*o.db)) : std::nullopt,
                              settings, items, o.force);
    run.record_selection(missing);
    const orchestrator::RunPlan& plan = run.plan();
    if (log)
        log(std::to_string(items.size()) + " candidate(s) for " + std::to_string(problems.size()) +
            " problem(s) in " + run.dir().string() + "; " + std::to_string(plan.done.size()) +
            " already done, " + std::to_string(plan.to_do()) + " to do");

    report::Multiplexer out;
    if (o.json) out.add(std::make_unique<report::JsonLinesReporter>(std::cout));
    if (!o.run.quiet)
        out.add(std::make_unique<report::ProgressReporter>(plan.to_do(), std::cerr, ::isatty(2)));
    out.add(std::make_unique<report::VerdictsFileWriter>());
    out.add(std::make_unique<report::KernelBenchWriter>());
    if (!o.json) out.add(std::make_unique<report::SummaryReporter>(std::cout));

    // Its verdicts, problems and unanswered ones: the whole run's, filled in by execute.
    report::RunOutcome outcome;
    outcome.exclude_flagged = o.exclude_flagged;
    outcome.timed = config.measure;
    outcome.target_rel_halfwidth = config.timing.target_rel_halfwidth;
    outcome.baseline = kb_baseline;
    outcome.baseline_source = o.kernelbench_baseline.value_or("");
    outcome.resume = command_line;

    std::optional<orchestrator::EngineOptions> engine;
    fs::path scratch;
    if (run.needs_engine())
        engine = make_engine_options(o.run, config, python, device_kind, gpus, o.cpu_judges,
                                     "kbench-eval-", run.dir() / "logs", scratch, log);
    report::RunOutcome finished = run.execute(engine, out, std::move(outcome), log);
    if (!scratch.empty()) {
        std::error_code ignored;
        fs::remove_all(scratch, ignored);
    }
    return exit_code(finished.verdicts, !finished.unanswered.empty());
}

}  // namespace

Command add_eval_command(CLI::App& app, const std::string& command_line) {
    auto o = std::make_shared<EvalOptions>();
    CLI::App* cmd = app.add_subcommand(
        "eval", "Evaluate candidates for a problem set on every GPU (or the CPU) and score them");
    add_selection_options(cmd, o->selection);
    cmd->add_option("--candidates", o->candidates,
                    "A folder (KernelBench run layout, or a folder a problem), a .jsonl file, or "
                    "builtin:cpu|cuda|triton (default: the built-in candidates for the device)");
    cmd->add_option("--device", o->device, "auto, cpu or cuda")->capture_default_str();
    cmd->add_option("--gpus", o->gpus, "GPUs to use: all, or ordinals like 0,1")
        ->capture_default_str();
    cmd->add_option("--cpu-judges", o->cpu_judges,
                    "On the CPU: judges evaluating side by side, each pinned to its own share of "
                    "the cores")
        ->capture_default_str()
        ->check(at_least_one());
    cmd->add_option("--run", o->run_name,
                    "Run name (default: from dataset, candidates and config)");
    cmd->add_option("--runs-dir", o->runs_dir, "Where runs live")->capture_default_str();
    cmd->add_option("--db", o->db, "Verdict database (default: RUNS_DIR/RUN/kbench.db)");
    cmd->add_option("--kernelbench-baseline", o->kernelbench_baseline,
                    "KernelBench's baseline times (results/timing/*.json) for the summary's "
                    "KernelBench view (default: each verdict's own baseline)")
        ->check(CLI::ExistingFile);
    cmd->add_flag("--force", o->force, "Evaluate again what the database already holds");
    cmd->add_flag("--exclude-flagged", o->exclude_flagged,
                  "Leave problems the audit flagged (kbench dataset audit) out of the score");
    cmd->add_flag("--json", o->json,
                  "Every verdict of the run as JSON lines on stdout (stored ones too), no "
                  "summary");
    add_run_options(cmd, o->run);
    return [o, &command_line] { return run_eval(*o, command_line); };
}

}  // namespace kbench::cli
