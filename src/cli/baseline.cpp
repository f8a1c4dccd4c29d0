// kbench baseline: reference programs timed alone, eager and through torch.compile, each in a
// judge started for it, kept per problem and setting, and written as KernelBench's
// results/timing files.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <iostream>
#include <mutex>
#include <thread>

#include <nlohmann/json.hpp>

#include "build/toolchain.hpp"
#include "cli/baseline_cache.hpp"
#include "cli/commands.hpp"
#include "cli/run_options.hpp"
#include "cli/selection_options.hpp"
#include "core/error.hpp"
#include "core/fields.hpp"
#include "core/files.hpp"
#include "orchestrator/devices/device_turns.hpp"
#include "orchestrator/devices/devices.hpp"
#include "orchestrator/engine/eval_engine.hpp"
#include "orchestrator/engine/evaluator.hpp"

namespace kbench::cli {
namespace {

struct BaselineOptions {
    SelectionOptions selection;
    std::string device = "auto";
    std::string precision = "fp32";
    std::string tf32;
    std::optional<std::string> python;
    std::optional<std::string> cache_dir;
    bool compile = false;
    std::vector<std::string> compile_modes;
    std::string out;
    bool force = false;
    bool json = false;
    bool quiet = false;
    double max_seconds = 10.0;
    double limit_s = 1800;
    int jobs = 0;  // 0: a judge for every 4 cores, at most 4, on a GPU; one on a CPU
};

std::string utc_now() {
    std::time_t t = std::time(nullptr);
    char text[32];
    std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
    return text;
}

// Mean, spread and count of a measurement, in milliseconds (the standard deviation the
// population's, numpy's default, as KernelBench's files have it).
json summary_ms(const protocol::Measured& measured) {
    TimingResult t = measured.summary();
    return {{"mean_ms", t.mean_us / 1000},     {"std_ms", t.std_us / 1000},
            {"min_ms", t.min_us / 1000},       {"max_ms", t.max_us / 1000},
            {"median_ms", t.median_us / 1000}, {"num_trials", t.n},
            {"converged", t.converged}};
}

// KernelBench's file in dir for mode, with these problems' entries put in (others kept).
void write_kernelbench_file(const fs::path& dir, const std::string& mode,
                            const std::vector<json>& entries) {
    fs::path path = dir / kernelbench_timing_file(mode);
    json table = json::object();
    if (fs::exists(path)) {
        try {
            table = json::parse(read_file(path));
        } catch (const std::exception& e) {
            throw UsageError("cannot read " + path.string() + ": " + e.what(),
                             "remove it, or give another folder with -o");
        }
        if (!table.is_object()) table = json::object();
    }
    for (const json& e : entries)
        table["level" + std::to_string(e.at("level").get<int>())]
             [e.at("name").get<std::string>() + ".py"] = kernelbench_timing_entry(e);
    fs::create_directories(dir);
    write_file_atomic(path, table.dump(2) + "\n");
}

int run_baselines(const BaselineOptions& o) {
    std::string python = build::find_python(o.python);
    auto problems = selected_problems(o.selection, python);
    orchestrator::DeviceChoice device = orchestrator::parse_device(o.device);
    std::vector<std::string> modes = {"eager"};
    if (o.compile && o.compile_modes.empty()) modes.push_back("default");
    for (const auto& m : o.compile_modes) {
        if (m.empty() || m == "eager" || m.find_first_of("/ ") != std::string::npos)
            throw UsageError("--compile-mode " + m + " is not a torch.compile mode",
                             "default, reduce-overhead, max-autotune or "
                             "max-autotune-no-cudagraphs");
        if (std::find(modes.begin(), modes.end(), m) == modes.end()) modes.push_back(m);
    }
    RunOptions run;
    run.precision = o.precision;
    run.tf32 = o.tf32;
    run.python = o.python;
    run.quiet = o.quiet;
    run.cache_dir = o.cache_dir;
    run.timing.max_seconds = o.max_seconds;
    CheckConfig config = make_config(run, device.label);
    fs::path scratch;
    orchestrator::EvaluatorOptions options =
        make_evaluator_options(config, python, device, "kbench-baseline-", scratch);
    auto log = make_logger(run);
    options.log = log;
    std::map<std::string, std::vector<json>> by_mode;
    int failed = 0, timed = 0, kept = 0;
    {
        if (log) log("starting the judge (" + device.label + ")");
        orchestrator::BuilderPool builds(
            make_builder_options(run, options.env, options.policy, scratch / "work", log));
        std::size_t wanted =
            o.jobs > 0 ? std::size_t(o.jobs)
            : device.kind == DeviceKind::cpu
                ? 1
                : std::clamp<std::size_t>(orchestrator::usable_cores().size() / 4, 1, 4);
        auto evaluator_options = [&](std::size_t job) {
            orchestrator::EvaluatorOptions e = options;
            // Each judge caches reference calls in its share of the device's memory.
            e.env.device_share = int(wanted);
            e.scratch_dir = options.scratch_dir / ("job-" + std::to_string(job));
            e.env.log_dir = options.env.log_dir / ("job-" + std::to_string(job));
            return e;
        };
        std::vector<std::unique_ptr<orchestrator::Evaluator>> evaluators;
        evaluators.push_back(
            std::make_unique<orchestrator::Evaluator>(evaluator_options(0), builds));
        json hello = evaluators[0]->judge_hello();
        std::string hardware = evaluators[0]->device_name();
        if (!o.json) {
            std::cout << fmt::format("{:<8} {:<48}", "problem", "name");
            for (const auto& m : modes) std::cout << fmt::format(" {:>16}", m + " ms");
            std::cout << "\n";
        }

        // What is kept already, and what is left to time.
        struct Cell {
            json entry;  // null: failed
            bool cached = false;
            bool done = false;
        };
        std::vector<std::vector<Cell>> cells(problems.size(), std::vector<Cell>(modes.size()));
        std::vector<std::pair<std::size_t, std::size_t>> work;
        auto setting_of = [&](std::size_t i, std::size_t m) {
            return BaselineSetting{
                problems[i].sha256, o.precision, std::string(to_string(config.tf32)),
                modes[m],           hello,       baseline_timing(config.timing.to_json())};
        };
        for (std::size_t i = 0; i < problems.size(); ++i)
            for (std::size_t m = 0; m < modes.size(); ++m) {
                json entry = o.force ? json(nullptr) : read_baseline(setting_of(i, m));
                if (entry.is_null()) {
                    work.emplace_back(i, m);
                    continue;
                }
                cells[i][m] = {entry, true, false};
            }

        std::mutex mutex;  // cells, counts, output
        std::size_t next = 0, started = 0;
        std::vector<bool> printed(problems.size(), false);
        // A problem's row (or its JSON lines) once each of its settings is done, in the order
        // they finish.
        auto finish = [&](std::size_t i, std::size_t m) {
            cells[i][m].done = true;
            if (o.json) {
                const Cell& c = cells[i][m];
                json row = c.entry;
                row["mode"] = modes[m];
                row["cached"] = c.cached;
                if (!c.entry.is_null()) std::cout << dump_text(row) << std::endl;
            }
            for (const Cell& c : cells[i])
                if (!c.done) return;
            if (o.json || printed[i]) return;
            printed[i] = true;
            const auto& p = problems[i];
            std::string row =
                fmt::format("{:<8} {:<48}", std::to_string(p.level) + "/" + std::to_string(p.id),
                            p.name.substr(0, 48));
            for (const Cell& c : cells[i])
                row += c.entry.is_null()
                           ? fmt::format(" {:>16}", "failed")
                           : fmt::format(" {:>16}",
                                         fmt::format("{:.4f}{}", c.entry.value("mean_ms", 0.0),
                                                     c.cached ? " (kept)" : ""));
            std::cout << row << std::endl;
        };
        for (std::size_t i = 0; i < problems.size(); ++i)
            for (std::size_t m = 0; m < modes.size(); ++m)
                if (cells[i][m].cached) {
                    ++kept;
                    finish(i, m);
                }

        orchestrator::DeviceTurns turns;
        std::size_t jobs =
            std::clamp<std::size_t>(wanted, 1, std::max<std::size_t>(work.size(), 1));
        // Settings that ran out of device memory beside other judges: timed again at the end,
        // by one judge alone.
        std::vector<std::pair<std::size_t, std::size_t>> again;
        auto time_one = [&](orchestrator::Evaluator* evaluator, std::size_t i, std::size_t m,
                            orchestrator::DeviceTurns* shared) {
            const auto& p = problems[i];
            const std::string& mode = modes[m];
            json entry;
            std::string error;
            try {
                protocol::BaselineTimed t = evaluator->baseline(
                    orchestrator::problem_spec(p),
                    {config.timing, true, mode == "eager" ? std::string() : mode}, o.limit_s,
                    shared);
                entry = summary_ms(*t.measured);
                entry["compile_s"] = t.compile_s;
                entry["level"] = p.level;
                entry["id"] = p.id;
                entry["name"] = p.name;
                entry["hardware"] = hardware;
                entry["device"] = device.label;
                entry["precision_state"] = t.precision;
                entry["made_at"] = utc_now();
                write_baseline(setting_of(i, m), entry);
            } catch (const std::exception& e) {  // this problem's, not the command's
                error = e.what();
            }
            std::lock_guard<std::mutex> lock(mutex);
            if (!error.empty() && shared && error.find("out of memory") != std::string::npos) {
                if (log)
                    log(p.label() + " (" + mode +
                        ") ran out of device memory beside other judges: it is timed again "
                        "alone at the end");
                again.emplace_back(i, m);
                return;
            }
            if (error.empty()) {
                ++timed;
                cells[i][m] = {entry, false, false};
            } else {
                ++failed;
                cells[i][m] = {json(nullptr), false, false};
                if (o.json)
                    std::cout << json{{"level", p.level},
                                      {"problem_id", p.id},
                                      {"name", p.name},
                                      {"mode", mode},
                                      {"error", error}}
                                     .dump()
                              << std::endl;
                if (log) log(p.label() + " (" + mode + ") failed: " + error);
            }
            finish(i, m);
        };
        auto serve = [&](std::size_t job) {
            for (;;) {
                std::size_t i, m;
                {
                    std::lock_guard<std::mutex> lock(mutex);
                    if (next >= work.size()) return;
                    std::tie(i, m) = work[next++];
                    if (log)
                        log(fmt::format(
                            "[{}/{}] timing {} ({})", ++started, work.size(), problems[i].label(),
                            modes[m] == "eager" ? "eager" : "torch.compile " + modes[m]));
                }
                time_one(evaluators[job].get(), i, m, jobs > 1 ? &turns : nullptr);
            }
        };
        if (jobs > 1 && log)
            log(
                fmt::format("{} judges share the device: they start, prepare and compile side "
                            "by side, and each times alone",
                            jobs));
        // The other judges start while the first one works.
        evaluators.resize(jobs);
        std::vector<std::thread> threads;
        for (std::size_t job = 0; job < jobs; ++job)
            threads.emplace_back([&, job] {
                if (!evaluators[job]) {
                    try {
                        evaluators[job] = std::make_unique<orchestrator::Evaluator>(
                            evaluator_options(job), builds);
                    } catch (const std::exception& e) {
                        if (log) log("a judge could not start: " + std::string(e.what()));
                        return;
                    }
                }
                serve(job);
            });
        for (auto& t : threads) t.join();
        // The other judges end, and their memory with them.
        evaluators.resize(1);
        for (auto [i, m] : again) {
            if (log) log("timing " + problems[i].label() + " (" + modes[m] + ") again, alone");
            time_one(evaluators[0].get(), i, m, nullptr);
        }
        evaluators.clear();
        for (std::size_t i = 0; i < problems.size(); ++i)
            for (std::size_t m = 0; m < modes.size(); ++m)
                if (!cells[i][m].entry.is_null()) by_mode[modes[m]].push_back(cells[i][m].entry);
    }
    std::error_code ignored;
    fs::remove_all(scratch, ignored);
    if (!o.out.empty())
        for (const auto& [mode, entries] : by_mode) write_kernelbench_file(o.out, mode, entries);
    if (!o.json) {
        std::cout << fmt::format(
            "{} problem(s), {} setting(s): {} timed now, {} kept from earlier (in {}), {} "
            "failed\n",
            problems.size(), modes.size(), timed, kept, baselines_dir().string(), failed);
        if (!o.out.empty())
            for (const auto& [mode, entries] : by_mode)
                std::cout << "wrote " << (fs::path(o.out) / kernelbench_timing_file(mode)).string()
                          << "\n";
    }
    return failed > 0 ? 1 : 0;
}

}  // namespace

Command add_baseline_command(CLI::App& app) {
    auto o = std::make_shared<BaselineOptions>();
    CLI::App* cmd = app.add_subcommand(
        "baseline",
        "Time reference programs alone (eager, and with --compile through torch.compile), each in "
        "a fresh judge; kept per problem, precision, device and versions, and written as "
        "KernelBench's results/timing files with -o");
    add_selection_options(cmd, o->selection);
    add_reference_options(cmd, o->device, o->precision, o->tf32);
    cmd->add_flag("--compile", o->compile,
                  "Also through torch.compile (mode default; --compile-mode for others)");
    cmd->add_option("--compile-mode", o->compile_modes,
                    "torch.compile modes to time (repeatable): default, reduce-overhead, "
                    "max-autotune, ...");
    cmd->add_option("-o,--out", o->out,
                    "Folder for KernelBench's files: baseline_time_torch.json and "
                    "baseline_time_torch_compile_inductor_<mode>.json (entries merged)");
    cmd->add_option("--max-seconds", o->max_seconds, "Seconds of sampling at most a problem")
        ->capture_default_str();
    cmd->add_flag("--force", o->force, "Time again what is kept already");
    cmd->add_option("--jobs", o->jobs,
                    "Judges at once on the device: they start, prepare and compile side by "
                    "side, and each times alone (default: on a GPU one for every 4 cores, at "
                    "most 4; on a CPU 1)");
    cmd->add_option("--python", o->python, "Python with torch (default: $KBENCH_PYTHON, python3)");
    cmd->add_flag("--json", o->json, "One JSON object a problem and setting");
    add_quiet_flag(cmd, o->quiet);
    add_cache_dir_option(cmd, o->cache_dir);
    return [o] { return run_baselines(*o); };
}

}  // namespace kbench::cli
