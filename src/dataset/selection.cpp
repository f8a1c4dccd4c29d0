#include "dataset/selection.hpp"

#include <algorithm>
#include <regex>
#include <sstream>

#include "core/error.hpp"

namespace kbench::dataset {

bool Selection::matches(const Problem& p) const {
    if (!levels.empty() && !levels.count(p.level)) return false;
    if (!id_ranges.empty() && std::none_of(id_ranges.begin(), id_ranges.end(), [&](const auto& r) {
            return p.id >= r.first && p.id <= r.second;
        }))
        return false;
    if (!names.empty() && std::find(names.begin(), names.end(), p.name) == names.end())
        return false;
    return true;
}

std::vector<std::pair<int, int>> parse_id_ranges(const std::string& text) {
    std::vector<std::pair<int, int>> out;
    std::stringstream in(text);
    static const std::regex range(R"(^\s*(\d+)\s*(?:-\s*(\d+))?\s*$)");
    for (std::string part; std::getline(in, part, ',');) {
        std::smatch m;
        if (!std::regex_match(part, m, range))
            throw UsageError("cannot read '" + part + "' in --problems " + text,
                             "give ids and ranges like 1-10,19");
        int lo = std::stoi(m[1]);
        int hi = m[2].matched ? std::stoi(m[2]) : lo;
        if (hi < lo) throw UsageError("range " + part + " runs backwards", "write it as low-high");
        out.emplace_back(lo, hi);
    }
    if (out.empty()) throw UsageError("--problems is empty", "give ids and ranges like 1-10,19");
    return out;
}

std::vector<Problem> select(const std::vector<Problem>& problems, const Selection& selection) {
    std::vector<Problem> out;
    for (const auto& p : problems)
        if (selection.matches(p)) out.push_back(p);
    return out;
}

}  // namespace kbench::dataset
