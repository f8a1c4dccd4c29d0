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

}  // namespace kbench::dataset
