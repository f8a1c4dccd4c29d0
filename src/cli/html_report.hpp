#pragma once

#include <optional>
#include <string>

#include "cli/score_input.hpp"

namespace kbench::cli {

// One self-contained page (no network at view time): the run's scores with their intervals,
// SVG plots (fast_p against p per level, the speedups' distribution, verdicts by status and
// level) and a sortable, filterable table a problem; with `other`, both runs side by side and
// the problems whose outcome changed.
std::string html_report(const ScoredRun& run, const std::vector<double>& thresholds,
                        const ScoredRun* other);

}  // namespace kbench::cli
