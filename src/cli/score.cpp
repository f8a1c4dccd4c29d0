// kbench score --run NAME: a run's scores from its store, with bootstrap intervals, as a table,
// JSON, CSV or Markdown.
#include <fmt/format.h>

#include <cmath>
#include <fstream>
#include <iostream>
#include <sstream>

#include "cli/commands.hpp"
#include "cli/html_report.hpp"
#include "cli/score_input.hpp"
#include "core/error.hpp"
#include "score/kernelbench_view.hpp"

namespace kbench::cli {
namespace {

struct ScoreOptions {
    RunSource source;
    std::string thresholds = "0,1,1.5,2";
    std::string baseline = "eager";
    std::string format = "table";
    bool exclude_flagged = false;
    int replicates = 2000;
    std::uint64_t seed = 20261202;
};

std::string percent(const score::Interval& i) {
    if (!i.defined) return "n/a";
    return fmt::format("{:.1f}% [{:.1f}, {:.1f}]", 100 * i.value, 100 * i.lo, 100 * i.hi);
}

std::string times(const score::Interval& i) {
    if (!i.defined) return "n/a";
    return fmt::format("{:.3f}x [{:.3f}, {:.3f}]", i.value, i.lo, i.hi);
}

json interval_json(const score::Interval& i, bool share) {
    if (!i.defined) return nullptr;
    return {{"value", i.value}, {"lo", i.lo}, {"hi", i.hi}, {"share", share}};
}

std::string p_label(double p) {
    return fmt::format("{:g}", p);
}

json score_json(const ScoredRun& s) {
    json levels = json::array();
    for (const auto& l : s.levels) {
        json fast = json::object();
        for (const auto& [p, i] : l.fast_p) fast[p_label(p)] = interval_json(i, true);
        levels.push_back({{"level", l.level},
                          {"problems", l.problems},
                          {"candidates", l.candidates},
                          {"correct_candidates", l.correct_candidates},
                          {"correct_rate", interval_json(l.correct_rate, true)},
                          {"fast_p", fast},
                          {"geomean_speedup", interval_json(l.geomean, false)},
                          {"geomean_problems", l.geomean_problems},
                          {"without_baseline", l.without_baseline},
                          {"flagged_left_out", l.flagged_left_out}});
    }
    json kb = json::array();
    for (const auto& v : s.kernelbench) {
        json fast = json::object();
        for (const auto& [p, share] : v.fast_p) fast[p_label(p)] = share;
        kb.push_back({{"level", v.level},
                      {"total", v.total},
                      {"evaluated", v.evaluated},
                      {"compiled", v.compiled},
                      {"correct", v.correct},
                      {"aligned", v.aligned},
                      {"geomean_speedup", v.geomean_speedup},
                      {"fast_p", fast}});
    }
    return {{"run", s.run_dir.string()},
            {"baseline", s.baseline_label},
            {"bootstrap",
             {{"replicates", s.options.replicates},
              {"seed", s.options.seed},
              {"resamples", "problems"},
              {"interval", "95% percentile"}}},
            {"exclude_flagged", s.exclude_flagged},
            {"not_evaluated", s.results.not_evaluated},
            {"unanswered", s.results.unanswered.size()},
            {"levels", levels},
            {"kernelbench_sample0", kb}};
}

void print_table(const ScoredRun& s, const std::vector<double>& thresholds, std::ostream& out) {
    out << fmt::format(
        "{} against {}; 95% intervals from {} bootstrap resamples of problems "
        "(seed {})\n",
        s.run_dir.filename().string(), s.baseline_label, s.options.replicates, s.options.seed);
    std::string head = fmt::format("{:<6} {:>8} {:>10}  {:<24}", "level", "problems", "candidates",
                                   "correct (of candidates)");
    for (double p : thresholds) head += fmt::format(" {:<24}", "fast_" + p_label(p));
    head += " geomean speedup (best correct)";
    out << head << "\n";
    for (const auto& l : s.levels) {
        std::string row = fmt::format("{:<6} {:>8} {:>10}  {:<24}", l.level, l.problems,
                                      l.candidates, percent(l.correct_rate));
        for (double p : thresholds) row += fmt::format(" {:<24}", percent(l.fast_p.at(p)));
        row += " " + times(l.geomean) + fmt::format(" over {}", l.geomean_problems);
        out << row << "\n";
    }
    for (const auto& l : s.levels)
        if (!l.without_baseline.empty() && l.level != "all") {
            std::string names;
            for (const auto& n : l.without_baseline) names += (names.empty() ? "" : ", ") + n;
            out << fmt::format("level {}: {} problem(s) without a baseline time, never fast: {}\n",
                               l.level, l.without_baseline.size(), names);
        }
    if (!s.results.unanswered.empty())
        out << fmt::format("{} problem(s) had no usable candidate: failures in every share\n",
                           s.results.unanswered.size());
    if (s.results.not_evaluated > 0)
        out << fmt::format(
            "{} candidate(s) not evaluated yet: their problems count as they stand\n",
            s.results.not_evaluated);
    for (const auto& l : s.levels)
        if (l.flagged_left_out > 0 && l.level != "all")
            out << fmt::format("level {}: {} problem(s) flagged by the audit left out\n", l.level,
                               l.flagged_left_out);
    if (!s.kernelbench.empty()) {
        out << "KernelBench's view (sample 0 of each problem, speedups strictly above p, as its "
               "benchmark_eval_analysis):\n";
        for (const auto& v : s.kernelbench) out << score::format_kernelbench_view(v);
    }
}

std::string csv_field(const std::string& text) {
    if (text.find_first_of(",\"\n") == std::string::npos) return text;
    std::string quoted = "\"";
    for (char c : text) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
    return quoted + "\"";
}

void print_csv(const ScoredRun& s, std::ostream& out) {
    out << "level,metric,value,lo,hi\n";
    auto row = [&](const std::string& level, const std::string& metric, const score::Interval& i) {
        if (!i.defined) {
            out << csv_field(level) << "," << metric << ",,,\n";
            return;
        }
        out << fmt::format("{},{},{:.6g},{:.6g},{:.6g}\n", csv_field(level), metric, i.value, i.lo,
                           i.hi);
    };
    for (const auto& l : s.levels) {
        out << fmt::format("{},problems,{},,\n", csv_field(l.level), l.problems);
        out << fmt::format("{},candidates,{},,\n", csv_field(l.level), l.candidates);
        row(l.level, "correct_rate", l.correct_rate);
        for (const auto& [p, i] : l.fast_p) row(l.level, "fast_" + p_label(p), i);
        row(l.level, "geomean_speedup", l.geomean);
    }
}

void print_markdown(const ScoredRun& s, const std::vector<double>& thresholds, std::ostream& out) {
    out << "| level | problems | candidates | correct |";
    for (double p : thresholds) out << " fast_" << p_label(p) << " |";
    out << " geomean speedup |\n|---|---:|---:|---|";
    for (std::size_t i = 0; i < thresholds.size(); ++i) out << "---|";
    out << "---|\n";
    for (const auto& l : s.levels) {
        out << "| " << l.level << " | " << l.problems << " | " << l.candidates << " | "
            << percent(l.correct_rate) << " |";
        for (double p : thresholds) out << " " << percent(l.fast_p.at(p)) << " |";
        out << " " << times(l.geomean) << " |\n";
    }
    out << "\n"
        << s.baseline_label << "; 95% intervals from " << s.options.replicates
        << " bootstrap resamples of problems (seed " << s.options.seed << ").\n";
}

// What a score and a report of it are made of: the run, the thresholds, the baseline, the
// flagged problems and the bootstrap.
void add_score_options(CLI::App& cmd, ScoreOptions& o) {
    add_run_source_options(cmd, o.source);
    cmd.add_option("--p", o.thresholds, "fast_p thresholds, comma-separated")
        ->capture_default_str();
    cmd.add_option("--baseline", o.baseline,
                   "eager (each verdict's own baseline, timed beside it), compile or "
                   "compile:MODE (torch.compile baselines kept by kbench baseline), or "
                   "KernelBench's results/timing JSON file")
        ->capture_default_str();
    cmd.add_flag("--exclude-flagged", o.exclude_flagged,
                 "Leave problems the audit flagged (kbench dataset audit) out");
    cmd.add_option("--bootstrap", o.replicates, "Bootstrap resamples")
        ->check(CLI::Range(100, 1000000))
        ->capture_default_str();
    cmd.add_option("--seed", o.seed, "The bootstrap's seed (recorded with the score)")
        ->capture_default_str();
}

ScoredRun score_of(const ScoreOptions& o, const RunSource& source,
                   const std::vector<double>& thresholds) {
    return score_run(source, o.baseline, thresholds, {o.replicates, o.seed}, o.exclude_flagged);
}

}  // namespace

Command add_score_command(CLI::App& app) {
    auto o = std::make_shared<ScoreOptions>();
    CLI::App* cmd = app.add_subcommand(
        "score",
        "A run's scores from its store: per level, correct rate, fast_p and the geometric "
        "mean speedup, each with a 95% bootstrap interval");
    add_score_options(*cmd, *o);
    cmd->add_option("--format", o->format, "table, json, csv or md")
        ->check(CLI::IsMember({"table", "json", "csv", "md"}))
        ->capture_default_str();
    return [o] {
        std::vector<double> thresholds = parse_thresholds(o->thresholds);
        ScoredRun s = score_of(*o, o->source, thresholds);
        if (o->format == "json")
            std::cout << score_json(s).dump(2) << "\n";
        else if (o->format == "csv")
            print_csv(s, std::cout);
        else if (o->format == "md")
            print_markdown(s, thresholds, std::cout);
        else
            print_table(s, thresholds, std::cout);
        return 0;
    };
}

Command add_report_command(CLI::App& app) {
    auto o = std::make_shared<ScoreOptions>();
    auto vs = std::make_shared<std::string>();
    auto output = std::make_shared<std::string>();
    CLI::App* cmd = app.add_subcommand(
        "report",
        "A run as one self-contained HTML page: scores with intervals, plots and a "
        "sortable, filterable table a problem; --vs puts another run beside it");
    add_score_options(*cmd, *o);
    cmd->add_option("--vs", *vs, "Another run (name under --runs-dir, or folder) to compare with");
    cmd->add_option("-o,--output", *output,
                    "The page to write (default: report.html in the run's folder)");
    return [o, vs, output] {
        std::vector<double> thresholds = parse_thresholds(o->thresholds);
        ScoredRun s = score_of(*o, o->source, thresholds);
        std::optional<ScoredRun> other;
        if (!vs->empty()) {
            RunSource source = o->source;
            source.run = *vs;
            other = score_of(*o, source, thresholds);
        }
        fs::path path = output->empty() ? s.run_dir / "report.html" : fs::path(*output);
        std::string page = html_report(s, thresholds, other ? &*other : nullptr);
        fs::path partial = path;
        partial += ".partial";
        {
            std::ofstream out(partial, std::ios::binary | std::ios::trunc);
            out << page;
            if (!out)
                throw UsageError("cannot write " + path.string(),
                                 "give -o a file in a folder you can write");
        }
        fs::rename(partial, path);
        std::cout << path.string() << "\n";
        return 0;
    };
}

}  // namespace kbench::cli
