#include "dataset/selection.hpp"

#include <algorithm>
#include <regex>
#include <set>
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

namespace {

std::string level_and_id(const Problem& p) {
    return std::to_string(p.level) + "/" + std::to_string(p.id);
}

// "1-6", "1, 3, 5-9", at most `limit` runs, then "..."; ids sorted.
std::string id_runs(std::vector<int> ids, std::size_t limit = 8) {
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    std::string out;
    std::size_t runs = 0;
    for (std::size_t i = 0; i < ids.size();) {
        std::size_t j = i;
        while (j + 1 < ids.size() && ids[j + 1] == ids[j] + 1) ++j;
        if (runs++ == limit) return out + ", ...";
        out += (out.empty() ? "" : ", ") + std::to_string(ids[i]) +
               (j > i ? "-" + std::to_string(ids[j]) : "");
        i = j + 1;
    }
    return out;
}

// "ids 1-6" or "id 3": the ids of one level.
std::string ids_of_level(const std::vector<Problem>& problems, int level) {
    std::vector<int> ids;
    for (const auto& p : problems)
        if (p.level == level) ids.push_back(p.id);
    return (ids.size() == 1 ? "id " : "ids ") + id_runs(ids);
}

const char* kNameForms = "name it as LEVEL/ID (1/19), LEVEL/NAME (1/19_ReLU) or NAME (19_ReLU)";

}  // namespace

std::string describe_levels(const std::vector<Problem>& problems) {
    std::set<int> levels;
    for (const auto& p : problems) levels.insert(p.level);
    std::string out;
    std::size_t i = 0;
    for (int level : levels) {
        if (i > 0) out += i + 1 == levels.size() ? " and " : ", ";
        out += "level " + std::to_string(level) + " (" + ids_of_level(problems, level) + ")";
        ++i;
    }
    return out.empty() ? "no problems" : out;
}

ProblemName parse_problem_name(const std::string& text) {
    static const std::regex form(R"(^(?:(?:level_?)?(\d+)/)?([^/\s]+)$)", std::regex::icase);
    std::smatch m;
    if (!std::regex_match(text, m, form))
        throw UsageError("cannot read '" + text + "' as a problem", kNameForms);
    ProblemName name;
    name.text = text;
    try {
        if (m[1].matched) name.level = std::stoi(m[1]);
    } catch (const std::out_of_range&) {
        throw UsageError("cannot read '" + text + "' as a problem: its level is out of range",
                         kNameForms);
    }
    name.id_or_name = m[2];
    if (name.id_or_name.size() > 3 && name.id_or_name.ends_with(".py"))
        name.id_or_name.resize(name.id_or_name.size() - 3);
    return name;
}

bool ProblemName::matches(const Problem& p) const {
    if (level && *level != p.level) return false;
    return id_or_name == p.name || id_or_name == std::to_string(p.id);
}

const Problem& find_problem(const std::vector<Problem>& problems, const std::string& text,
                            const std::string& dataset) {
    ProblemName name = parse_problem_name(text);
    std::vector<const Problem*> found;
    for (const auto& p : problems)
        if (name.matches(p)) found.push_back(&p);
    if (found.size() == 1) return *found.front();
    if (found.size() > 1) {
        std::string which;
        for (const Problem* p : found) which += (which.empty() ? "" : ", ") + level_and_id(*p);
        throw UsageError("'" + text + "' names " + std::to_string(found.size()) + " problems of " +
                             dataset + ": " + which,
                         "add the level, as in " + level_and_id(*found.front()));
    }
    bool level_exists =
        name.level && std::any_of(problems.begin(), problems.end(),
                                  [&](const Problem& p) { return p.level == *name.level; });
    std::string what = level_exists ? ": its level " + std::to_string(*name.level) + " holds " +
                                          ids_of_level(problems, *name.level)
                                    : ": it holds " + describe_levels(problems);
    std::string example = problems.empty() ? "1/1" : level_and_id(problems.front());
    throw UsageError("no problem '" + text + "' in " + dataset + what,
                     "name one that exists, as in " + example +
                         ", or list them: kbench dataset list --dataset " + dataset);
}

std::vector<std::pair<int, int>> parse_id_ranges(const std::string& text) {
    std::vector<std::pair<int, int>> out;
    std::stringstream in(text);
    static const std::regex range(R"(^\s*(\d+)\s*(?:-\s*(\d+))?\s*$)");
    for (std::string part; std::getline(in, part, ',');) {
        std::smatch m;
        if (!std::regex_match(part, m, range)) {
            auto slash = part.find('/');
            if (slash != std::string::npos)
                throw UsageError("cannot read '" + part + "' in --problems " + text +
                                     ": --problems takes ids, not LEVEL/ID",
                                 "give the level apart: --level " + part.substr(0, slash) +
                                     " --problems " + part.substr(slash + 1));
            throw UsageError("cannot read '" + part + "' in --problems " + text,
                             "give ids and ranges like 1-10,19");
        }
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
