#pragma once

#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "dataset/problem.hpp"

namespace kbench::dataset {

// Which problems a run takes: --level, --problems 1-10,19, --names.
struct Selection {
    std::set<int> levels;                        // empty: every level
    std::vector<std::pair<int, int>> id_ranges;  // inclusive; empty: every id
    std::vector<std::string> names;              // empty: every name

    bool matches(const Problem& problem) const;
    bool empty() const { return levels.empty() && id_ranges.empty() && names.empty(); }
};

// "1-10,19" -> {{1, 10}, {19, 19}}; throws UsageError on anything else.
std::vector<std::pair<int, int>> parse_id_ranges(const std::string& text);

std::vector<Problem> select(const std::vector<Problem>& problems, const Selection& selection);

// What problems hold, level by level: "level 1 (ids 1-6), level 2 (ids 1-4) and level 3
// (ids 1, 3)"; a level with many scattered ids ends its list with "...".
std::string describe_levels(const std::vector<Problem>& problems);

// One problem as a person names it: "1/19", "level1/19", "1/19_ReLU", "19_ReLU" or "19".
struct ProblemName {
    std::string text;
    std::optional<int> level;
    std::string id_or_name;

    bool matches(const Problem& problem) const;
};

// Throws UsageError, saying which forms are understood, for anything else.
ProblemName parse_problem_name(const std::string& text);

// The one problem of `problems` (read from `dataset`) that text names; throws UsageError naming
// what the dataset holds when none does, and the candidates when several do.
const Problem& find_problem(const std::vector<Problem>& problems, const std::string& text,
                            const std::string& dataset);

}  // namespace kbench::dataset
