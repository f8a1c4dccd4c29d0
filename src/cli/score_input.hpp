#pragma once

#include <CLI/CLI.hpp>

#include <optional>
#include <string>
#include <vector>

#include "core/files.hpp"
#include "orchestrator/run/eval_run.hpp"
#include "score/kernelbench_view.hpp"
#include "score/run_score.hpp"

namespace kbench::cli {

// Which run a score or a report reads: --run NAME under --runs-dir, or its folder.
struct RunSource {
    std::string run;
    std::string runs_dir = "runs";
};
void add_run_source_options(CLI::App& cmd, RunSource& source);
fs::path run_folder(const RunSource& source);

std::vector<double> parse_thresholds(const std::string& text);

// A run scored from its store alone.
struct ScoredRun {
    fs::path run_dir;
    orchestrator::RunResults results;
    std::vector<score::ProblemOutcome> outcomes;
    std::vector<score::LevelScore> levels;
    std::vector<score::KernelBenchView> kernelbench;  // sample 0, KernelBench's rules
    std::string baseline_label;
    score::BootstrapOptions options;
    bool exclude_flagged = false;
};

// baseline: "eager" or a KernelBench results/timing JSON file.
ScoredRun score_run(const RunSource& source, const std::string& baseline,
                    const std::vector<double>& thresholds, const score::BootstrapOptions& options,
                    bool exclude_flagged);

}  // namespace kbench::cli
