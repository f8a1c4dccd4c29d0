// kbench eval: candidates for many problems, on every device, resumable, scored.
#include <unistd.h>

#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
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
#include "report/reporter.hpp"
#include "schedule/devices.hpp"
#include "schedule/eval_engine.hpp"
#include "schedule/interruption.hpp"
#include "schedule/run_plan.hpp"
#include "store/run_lock.hpp"
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

// The physical GPUs of --gpus, checked against what is visible.
std::vector<std::string> gpu_ids(const std::string& spec, bool asked_for_cuda) {
    int count = schedule::count_gpus();
    std::vector<std::string> ids;
    if (spec == "all") {
        for (int i = 0; i < count; ++i) ids.push_back(schedule::physical_gpu(i));
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
        ids.push_back(schedule::physical_gpu(std::stoi(id)));
    }
    return ids;
}

fs::path make_run_dir(const fs::path& dir) {
    std::error_code error;
    fs::create_directories(dir, error);
    if (error || ::access(dir.c_str(), W_OK) != 0)
        throw UsageError("cannot write the run folder " + dir.string() + ": " +
                             (error ? error.message() : std::string("permission denied")),
                         "pass --runs-dir (or --run) to a folder you can write");
    return dir;
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

// A stored verdict as this item's: items with the same code (two samples alike, two problems
// alike) share a key and a verdict, and each reports under its own name.
Verdict verdict_of(const store::StoredVerdict& stored, const schedule::EvalItem& item) {
    Verdict v = Verdict::from_json(stored.verdict);
    v.problem.level = item.problem.level;
    v.problem.id = item.problem.id;
    v.problem.name = item.problem.name;
    v.candidate.sample_id = item.candidate.sample_id;
    v.candidate.path = schedule::candidate_spec(item).path.string();
    return v;
}

int run_eval(const EvalOptions& o, const std::string& command_line) {
    std::string python = build::find_python(o.run.python);
    bool cpu = o.device == "cpu";
    std::vector<std::string> gpus;
    if (!cpu) {
        if (o.device != "auto" && o.device.rfind("cuda", 0) != 0)
            throw UsageError("unknown device '" + o.device + "'", "use auto, cpu or cuda");
        gpus = gpu_ids(o.gpus, o.device != "auto");
        if (gpus.empty()) {
            if (o.device != "auto")
                throw UsageError("no GPU is visible", "use --device cpu, or check nvidia-smi");
            cpu = true;
        }
    } else if (o.gpus != "all") {
        throw UsageError("--gpus is for evaluations on GPUs, and the device is cpu",
                         "leave --gpus out, or use --device cuda");
    }
    if (!cpu && o.cpu_judges != 1)
        throw UsageError("--cpu-judges is for evaluations on the CPU",
                         "add --device cpu, or leave --cpu-judges out to use the GPUs");
    if (cpu && o.cpu_judges > 1) schedule::split_cores(schedule::usable_cores(), o.cpu_judges);
    std::string device_kind = cpu ? "cpu" : "cuda";
    CheckConfig config = make_config(o.run, device_kind);
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
    std::string candidate_spec = o.candidates.empty() ? "builtin:" + device_kind : o.candidates;
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

    std::vector<schedule::EvalItem> items;
    for (const auto& c : scan.candidates) {
        schedule::EvalItem item;
        for (const auto& p : problems)
            if (p.level == c.level && p.id == c.problem_id) item.problem = p;
        item.candidate = c;
        item.backend = detect_backend(o.run.backend, c.code, device_kind);
        item.key = schedule::item_key(item.problem, c, item.backend, config);
        items.push_back(std::move(item));
    }

    std::string run_name = o.run_name.empty()
                               ? slug(o.selection.dataset) + "-" + slug(candidate_spec) + "-" +
                                     o.run.mode + "-" + o.run.precision + "-" + device_kind
                               : o.run_name;
    fs::path run_dir = make_run_dir(fs::absolute(fs::path(o.runs_dir) / run_name));
    store::RunLock lock(run_dir);
    auto store = store::open_sqlite_store(o.db ? fs::path(*o.db) : run_dir / "kbench.db");
    // A run keeps the configuration it was made with: other settings are another run.
    CheckConfig recorded = config;
    recorded.device = device_kind;
    if (auto before = store->meta("config")) {
        CheckConfig earlier = CheckConfig::from_json(nlohmann::json::parse(*before));
        auto differences = earlier.differences(recorded);
        if (!differences.empty()) {
            std::string fields;
            for (const auto& d : differences) fields += (fields.empty() ? "" : ", ") + d;
            throw UsageError("the run " + run_dir.string() +
                                 " was made with other settings (they differ in " + fields + ")",
                             "use another --run name for these settings, or the run's own");
        }
    } else {
        store->set_meta("config", recorded.to_json().dump());
    }

    std::vector<schedule::ItemRecord> records;
    for (const auto& item : items) {
        schedule::ItemRecord r;
        if (auto stored = store->find(item.key)) r.status = stored->status;
        r.attempts = store->attempts(item.key);
        records.push_back(r);
    }
    schedule::RunPlan plan = schedule::plan_run(records, o.force);
    if (log)
        log(std::to_string(items.size()) + " candidate(s) for " + std::to_string(problems.size()) +
            " problem(s) in " + run_dir.string() + "; " + std::to_string(plan.done.size()) +
            " already done, " + std::to_string(plan.to_do()) + " to do");

    report::Multiplexer out;
    if (o.json) out.add(std::make_unique<report::JsonLinesReporter>(std::cout));
    if (!o.run.quiet)
        out.add(std::make_unique<report::ProgressReporter>(plan.to_do(), std::cerr, ::isatty(2)));
    out.add(std::make_unique<report::VerdictsFileWriter>());
    out.add(std::make_unique<report::KernelBenchWriter>());
    if (!o.json) out.add(std::make_unique<report::SummaryReporter>(std::cout));

    for (std::size_t i : plan.done) out.stored(verdict_of(*store->find(items[i].key), items[i]));

    // Verdicts are recorded one at a time; an interruption takes the same lock, so that what
    // it writes holds every verdict stored and no verdict is stored after it.
    std::mutex record_mutex;
    std::set<std::string> in_flight;
    auto record = [&](const schedule::EvalItem& item, const Verdict& v) {
        std::lock_guard<std::mutex> guard(record_mutex);
        if (schedule::InterruptGuard::interrupted()) return;  // its workers were killed
        store->put({item.key, item.candidate.level, item.candidate.problem_id,
                    item.candidate.sample_id, std::string(to_string(v.status)), v.to_json()});
        in_flight.erase(item.key);
        out.verdict(v);
    };
    auto outcome = [&](int signal) {
        report::RunOutcome r;
        r.run_dir = run_dir.string();
        for (const auto& item : items)
            if (auto stored = store->find(item.key)) {
                r.verdicts.push_back(verdict_of(*stored, item));
            } else {
                ++r.not_evaluated;
            }
        for (const auto& p : problems) r.problems.push_back({p.level, p.id, p.name});
        r.unanswered = missing;
        r.signal = signal;
        r.exclude_flagged = o.exclude_flagged;
        r.timed = config.measure;
        r.target_rel_halfwidth = config.timing.target_rel_halfwidth;
        r.baseline = kb_baseline;
        r.baseline_source = o.kernelbench_baseline.value_or("");
        r.resume = command_line;
        return r;
    };

    schedule::InterruptGuard guard([&](int signal, schedule::Origin origin) {
        std::lock_guard<std::mutex> hold(record_mutex);
        // An interruption from outside is no attempt of the candidates it stopped; one whose
        // sender kbench cannot vouch for counts, as an abnormal end does (a candidate that
        // stops runs that way gets its crash verdict all the same).
        if (origin == schedule::Origin::outside)
            for (const auto& key : in_flight) store->cancel_attempt(key);
        report::RunOutcome r = outcome(signal);
        out.finish(r);
        if (origin != schedule::Origin::outside && !in_flight.empty())
            std::cerr << "kbench: the signal's sender could not be verified (gone, queued, or "
                         "kbench was stopped meanwhile): the "
                      << in_flight.size() << " evaluation(s) under way count as attempts\n";
        std::cerr << "kbench: interrupted; " << r.verdicts.size() << " verdict(s) kept in "
                  << run_dir.string() << "; run the same command again to resume" << std::endl;
    });

    for (const auto& [index, attempts] : plan.condemned) {
        const auto& item = items[index];
        Verdict v = schedule::make_verdict(config, schedule::problem_spec(item.problem),
                                           schedule::candidate_spec(item), "");
        v.status = Status::crash;
        v.reason = schedule::condemned_reason(attempts);
        record(item, v);
    }

    fs::path scratch;
    if (!plan.suspects.empty() || !plan.rest.empty()) {
        schedule::EngineOptions e;
        e.config = config;
        e.env.python = python;
        e.policy = schedule::SandboxPolicy::decide(python);
        scratch = make_scratch("kbench-eval-", e.policy);
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
        auto stored = [&](const schedule::EvalItem& item, const Verdict& v, const std::string&) {
            record(item, v);
        };
        auto started = [&](const schedule::EvalItem& item) {
            std::lock_guard<std::mutex> hold(record_mutex);
            if (schedule::InterruptGuard::interrupted()) return;
            store->begin_attempt(item.key);
            in_flight.insert(item.key);
        };
        schedule::EvalEngine engine(e);  // started once: every pass below uses its workers
        for (std::size_t index : plan.suspects) {
            if (log)
                log(items[index].candidate.source +
                    ": the last run stopped while evaluating it; evaluating it alone first");
            engine.run({items[index]}, stored, started);
        }
        std::vector<schedule::EvalItem> rest;
        for (std::size_t index : plan.rest) rest.push_back(items[index]);
        engine.run(rest, stored, started);
    }
    for (const auto& h : schedule::InterruptGuard::take_all_hostile())
        if (log)
            log("ignored a signal (" + std::to_string(h.signal) + ") from pid " +
                std::to_string(h.sender) + ", a process under kbench's own workers");
    if (!scratch.empty()) {
        std::error_code ignored;
        fs::remove_all(scratch, ignored);
    }

    std::lock_guard<std::mutex> hold(record_mutex);
    report::RunOutcome r = outcome(0);
    out.finish(r);
    return exit_code(r.verdicts, !r.unanswered.empty());
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
