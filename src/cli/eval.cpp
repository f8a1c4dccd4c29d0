// kbench eval: candidates for many problems, on every device, resumable, scored.
#include <unistd.h>

#include <fstream>
#include <iostream>
#include <map>
#include <regex>

#include "build/toolchain.hpp"
#include "cli/commands.hpp"
#include "cli/run_options.hpp"
#include "cli/selection_options.hpp"
#include "core/error.hpp"
#include "core/files.hpp"
#include "core/sha256.hpp"
#include "dataset/candidate_set.hpp"
#include "report/kernelbench_results.hpp"
#include "report/progress.hpp"
#include "report/reporter.hpp"
#include "schedule/devices.hpp"
#include "schedule/eval_engine.hpp"
#include "score/fast_p.hpp"
#include "store/verdict_store.hpp"

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

std::vector<std::string> gpu_ids(const std::string& spec) {
    std::vector<std::string> ids;
    if (spec == "all") {
        int count = schedule::count_gpus();
        for (int i = 0; i < count; ++i) ids.push_back(schedule::physical_gpu(i));
    } else {
        std::stringstream in(spec);
        for (std::string id; std::getline(in, id, ',');)
            if (!id.empty()) ids.push_back(schedule::physical_gpu(std::stoi(id)));
    }
    return ids;
}

// What decides a verdict besides the two programs; part of every store key.
std::string config_key(const CheckConfig& c, const std::string& device_kind) {
    json j = {{"mode", std::string(to_string(c.mode))},
              {"precision", std::string(to_string(c.precision))},
              {"tf32", c.tf32},
              {"policy", c.policy},
              {"allow", c.allow},
              {"deny", c.deny},
              {"trials", c.trials},
              {"seed", c.seed},
              {"atol", c.atol()},
              {"measure", c.measure},
              {"timing", c.timing.to_json()},
              {"device", device_kind}};
    return sha256_hex(j.dump());
}

void write_outputs(const fs::path& run_dir, const std::vector<Verdict>& verdicts) {
    std::string lines;
    std::map<int, std::vector<Verdict>> by_level;
    for (const auto& v : verdicts) {
        lines += v.to_json().dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
        by_level[v.problem.level.value_or(0)].push_back(v);
    }
    write_file_atomic(run_dir / "verdicts.jsonl", lines);
    for (const auto& [level, list] : by_level) {
        // KernelBench keeps one file a level; a one-level run gets its usual name.
        std::string name = by_level.size() == 1
                               ? "eval_results.json"
                               : "eval_results_level" + std::to_string(level) + ".json";
        write_file_atomic(run_dir / name, report::kernelbench_eval_results(list).dump(4) + "\n");
    }
}

int run_eval(const EvalOptions& o) {
    std::string python = build::find_python(o.run.python);
    bool cpu = o.device == "cpu";
    std::vector<std::string> gpus;
    if (!cpu) {
        if (o.device != "auto" && o.device.rfind("cuda", 0) != 0)
            throw UsageError("unknown device '" + o.device + "'", "use auto, cpu or cuda");
        gpus = gpu_ids(o.gpus);
        if (gpus.empty()) {
            if (o.device != "auto")
                throw UsageError("no GPU is visible", "use --device cpu, or check nvidia-smi");
            cpu = true;
        }
    }
    if (!cpu && o.cpu_judges != 1)
        throw UsageError("--cpu-judges is for evaluations on the CPU",
                         "add --device cpu, or leave --cpu-judges out to use the GPUs");
    if (cpu && o.cpu_judges > 1) schedule::split_cores(schedule::usable_cores(), o.cpu_judges);
    std::string device_kind = cpu ? "cpu" : "cuda";
    CheckConfig config = make_config(o.run, cpu ? "cpu" : "cuda");

    auto problems = selected_problems(o.selection, python);
    std::string candidate_spec = o.candidates.empty() ? "builtin:" + device_kind : o.candidates;
    auto candidates = dataset::load_candidates(candidate_spec, problems);
    if (candidates.empty())
        throw UsageError("no candidates in " + candidate_spec + " for the selected problems",
                         "candidate files are named level_L_problem_P_sample_S_kernel.py");

    std::string cfg = config_key(config, device_kind);
    std::vector<schedule::EvalItem> items;
    for (const auto& c : candidates) {
        schedule::EvalItem item;
        for (const auto& p : problems)
            if (p.level == c.level && p.id == c.problem_id) item.problem = p;
        item.candidate = c;
        item.backend = detect_backend(o.run.backend, c.code, device_kind);
        item.key = sha256_hex(item.problem.sha256 + "/" + c.sha256 + "/" + cfg + "/" +
                              std::string(to_string(item.backend)));
        items.push_back(std::move(item));
    }

    std::string run_name = o.run_name.empty()
                               ? slug(o.selection.dataset) + "-" + slug(candidate_spec) + "-" +
                                     o.run.mode + "-" + o.run.precision + "-" + device_kind
                               : o.run_name;
    fs::path run_dir = fs::absolute(fs::path(o.runs_dir) / run_name);
    fs::create_directories(run_dir);
    auto store = store::open_sqlite_store(o.db ? fs::path(*o.db) : run_dir / "kbench.db");

    // A candidate whose evaluation began in a run that stopped before its verdict (kbench
    // killed, the machine out of memory) is a suspect: it is evaluated alone, before the rest,
    // so that a second stop names it; after two such stops it gets a crash verdict, not a third.
    std::vector<schedule::EvalItem> suspects, rest;
    std::vector<std::pair<schedule::EvalItem, int>> condemned;  // with their attempts
    for (const auto& item : items) {
        auto stored = store->find(item.key);
        // Harness failures are not verdicts on the candidate: they are always tried again.
        if (!o.force && stored && stored->status != "infra_error") continue;
        int attempts = o.force || stored ? 0 : store->attempts(item.key);
        if (attempts == 0) {
            rest.push_back(item);
        } else if (attempts == 1) {
            suspects.push_back(item);
        } else {
            condemned.emplace_back(item, attempts);
        }
    }
    auto log = make_logger(o.run);
    std::size_t to_do = suspects.size() + rest.size() + condemned.size();
    if (log)
        log(std::to_string(items.size()) + " candidate(s) for " + std::to_string(problems.size()) +
            " problem(s) in " + run_dir.string() + "; " + std::to_string(items.size() - to_do) +
            " already done, " + std::to_string(to_do) + " to do");

    report::JsonLinesReporter lines(std::cout);
    auto record = [&](const schedule::EvalItem& item, const Verdict& v) {
        store->put({item.key, item.candidate.level, item.candidate.problem_id,
                    item.candidate.sample_id, std::string(to_string(v.status)), v.to_json()});
        if (o.json) lines.verdict(v);
    };
    for (const auto& [item, attempts] : condemned) {
        Verdict v = schedule::make_verdict(config, schedule::problem_spec(item.problem),
                                           schedule::candidate_spec(item), "");
        v.status = Status::crash;
        v.reason = "kbench stopped " + std::to_string(attempts) +
                   " times while evaluating this candidate, the last time with it running "
                   "alone (killed, or out of memory); it is not evaluated again (--force "
                   "does)";
        record(item, v);
        if (log) log(item.candidate.source + ": " + v.reason);
    }

    if (!suspects.empty() || !rest.empty()) {
        schedule::EngineOptions e;
        e.config = config;
        e.env.python = python;
        e.policy = schedule::SandboxPolicy::decide(python);
        fs::path scratch = make_scratch("kbench-eval-", e.policy);
        e.env.worker_package_dir = build::worker_package_dir();
        e.env.device_kind = device_kind;
        e.env.log_dir = run_dir / "logs";
        e.gpus = gpus;
        e.cpu_judges = o.cpu_judges;
        e.builds = make_builder_options(o.run, e.env, e.policy, scratch / "work",
                                        o.run.verbose ? log : nullptr);
        e.scratch_dir = scratch / "work";
        e.log = log;
        e.verbose = o.run.verbose && !o.run.quiet;
        if (o.run.gpu_peaks) e.gpu_peaks = fs::absolute(*o.run.gpu_peaks);
        report::Progress progress(suspects.size() + rest.size(), std::cerr,
                                  !o.run.quiet && ::isatty(2));
        schedule::EvalEngine engine(e);
        auto stored = [&](const schedule::EvalItem& item, const Verdict& v, const std::string&) {
            record(item, v);
            if (!o.run.quiet) progress.add(std::string(to_string(v.status)));
        };
        auto started = [&](const schedule::EvalItem& item) { store->begin_attempt(item.key); };
        for (const auto& suspect : suspects) {
            if (log)
                log(suspect.candidate.source +
                    ": the last run stopped while evaluating it; evaluating it alone first");
            engine.run({suspect}, stored, started);
        }
        engine.run(rest, stored, started);
        if (!o.run.quiet) progress.finish();
        std::error_code ignored;
        fs::remove_all(scratch, ignored);
    }

    std::vector<Verdict> verdicts;
    for (const auto& item : items)
        if (auto stored = store->find(item.key))
            verdicts.push_back(Verdict::from_json(stored->verdict));
    write_outputs(run_dir, verdicts);
    if (!o.json) {
        std::cout << score::format_score(
            score::score_verdicts(verdicts, {0.0, 1.0, 1.5, 2.0}, o.exclude_flagged));
        std::map<std::string, int> by_device;
        for (const auto& v : verdicts) ++by_device[v.config.value("device", std::string("?"))];
        if (by_device.size() > 1) {
            std::cout << "  by device:";
            for (const auto& [device, count] : by_device)
                std::cout << " " << device << " " << count;
            std::cout << "\n";
        }
        std::cout << "verdicts: " << (run_dir / "verdicts.jsonl").string() << "\n";
    }
    return 0;
}

}  // namespace

Command add_eval_command(CLI::App& app) {
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
        ->check(CLI::PositiveNumber);
    cmd->add_option("--run", o->run_name,
                    "Run name (default: from dataset, candidates and config)");
    cmd->add_option("--runs-dir", o->runs_dir, "Where runs live")->capture_default_str();
    cmd->add_option("--db", o->db, "Verdict database (default: RUNS_DIR/RUN/kbench.db)");
    cmd->add_flag("--force", o->force, "Evaluate again what the database already holds");
    cmd->add_flag("--exclude-flagged", o->exclude_flagged,
                  "Leave problems the audit flagged (kbench dataset audit) out of the score");
    cmd->add_flag("--json", o->json, "Verdicts as JSON lines on stdout, no score");
    add_run_options(cmd, o->run);
    return [o] { return run_eval(*o); };
}

}  // namespace kbench::cli
