#include "cli/score_input.hpp"

#include <algorithm>
#include <sstream>
#include <tuple>

#include "cli/baseline_cache.hpp"
#include "core/error.hpp"
#include "store/verdict_store.hpp"

namespace kbench::cli {

void add_run_source_options(CLI::App& cmd, RunSource& source) {
    cmd.add_option("--run", source.run, "The run: its name under --runs-dir, or its folder")
        ->required();
    cmd.add_option("--runs-dir", source.runs_dir, "Where runs live")->capture_default_str();
}

fs::path run_folder(const RunSource& source) {
    fs::path named = fs::path(source.runs_dir) / source.run;
    if (fs::exists(named / "kbench.db")) return fs::absolute(named);
    if (fs::exists(fs::path(source.run) / "kbench.db")) return fs::absolute(source.run);
    throw UsageError("no run store at " + (named / "kbench.db").string(),
                     "give the name of a run under --runs-dir (kbench eval --run NAME made it), "
                     "or the folder that holds its kbench.db");
}

std::vector<double> parse_thresholds(const std::string& text) {
    std::vector<double> out;
    std::stringstream in(text);
    for (std::string item; std::getline(in, item, ',');) {
        try {
            std::size_t used = 0;
            double p = std::stod(item, &used);
            if (used != item.size() || p < 0 || p != p) throw std::invalid_argument(item);
            out.push_back(p);
        } catch (const std::exception&) {
            throw UsageError(
                "--p takes numbers of at least 0, comma-separated; '" + item + "' is not one",
                "for instance --p 0,1,1.5,2");
        }
    }
    if (out.empty()) throw UsageError("--p names no threshold", "for instance --p 0,1,1.5,2");
    return out;
}

ScoredRun score_run(const RunSource& source, const std::string& baseline,
                    const std::vector<double>& thresholds, const score::BootstrapOptions& options,
                    bool exclude_flagged) {
    ScoredRun s;
    s.run_dir = run_folder(source);
    s.options = options;
    s.exclude_flagged = exclude_flagged;
    auto store = store::open_sqlite_store(s.run_dir / "kbench.db");
    s.results = orchestrator::load_run_results(*store);
    json table;
    if (baseline == "eager") {
        s.baseline_label = "each verdict's own eager baseline (timed beside it)";
    } else if (baseline == "compile" || baseline.rfind("compile:", 0) == 0) {
        std::string mode = baseline == "compile" ? "default" : baseline.substr(8);
        int found = 0;
        table = kept_baseline_table(s.results.verdicts, mode, &found);
        if (found == 0)
            throw UsageError("no torch.compile (" + mode +
                                 ") baseline is kept for this run's problems on its device and "
                                 "precision",
                             "time them with kbench baseline --compile" +
                                 std::string(mode == "default" ? "" : " --compile-mode " + mode) +
                                 " (same --dataset, --level and --precision)");
        s.baseline_label = "torch.compile (" + mode + ") baselines kept by kbench baseline (" +
                           std::to_string(found) + " problem(s))";
    } else {
        try {
            table = json::parse(read_file(baseline));
        } catch (const std::exception& e) {
            throw UsageError("cannot read the baseline file " + baseline + ": " + e.what(),
                             "give eager, or KernelBench's results/timing JSON ({\"level1\": "
                             "{\"1_...py\": {\"mean\": ms}}})");
        }
        if (!table.is_object())
            throw UsageError("the baseline file " + baseline + " is not a JSON object",
                             "give KernelBench's results/timing JSON ({\"level1\": {\"1_...py\": "
                             "{\"mean\": ms}}})");
        s.baseline_label = "the baseline file " + baseline;
    }
    std::vector<std::tuple<int, int, std::string>> problems;
    for (const auto& p : s.results.problems) problems.emplace_back(p.level, p.id, p.name);
    s.outcomes = score::problem_outcomes(s.results.verdicts, problems, table);
    s.levels = score::score_levels(s.outcomes, thresholds, options, exclude_flagged);
    // A run that timed nothing (--no-timing) has no speedups: fast_p above 0 is not 0%, it is
    // not known.
    bool timed = std::any_of(s.results.verdicts.begin(), s.results.verdicts.end(),
                             [](const Verdict& v) { return v.timing.has_value(); });
    if (!timed)
        for (auto& level : s.levels) {
            for (auto& [p, share] : level.fast_p)
                if (p > 0) share.defined = false;
            level.geomean.defined = false;
        }
    s.kernelbench = score::kernelbench_view(s.results.verdicts, s.results.problems, table);
    return s;
}

}  // namespace kbench::cli
