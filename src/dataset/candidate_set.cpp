#include "dataset/candidate_set.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <regex>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/files.hpp"
#include "dataset/json_lines.hpp"
#include "dataset/problem_file.hpp"
#include "dataset/problem_set.hpp"

namespace kbench::dataset {
namespace {

using json = nlohmann::json;

// The file's text, or why it cannot be read (a dangling link, no permission).
std::optional<std::string> readable(const fs::directory_entry& entry,
                                    std::vector<SkippedCandidate>& skipped, int level,
                                    int problem_id) {
    std::error_code error;
    const fs::path& path = entry.path();
    if (entry.is_symlink(error) && !fs::exists(path, error)) {
        std::error_code ignored;
        skipped.push_back({path.string(), level, problem_id,
                           "dangling link to " + fs::read_symlink(path, ignored).string()});
        return std::nullopt;
    }
    if (!fs::is_regular_file(path, error)) {
        skipped.push_back({path.string(), level, problem_id, "not a regular file"});
        return std::nullopt;
    }
    try {
        return read_file(path);
    } catch (const std::exception& e) {
        skipped.push_back(
            {path.string(), level, problem_id, std::string("unreadable: ") + e.what()});
        return std::nullopt;
    }
}

std::vector<Candidate> read_run_layout(const fs::path& dir,
                                       std::vector<SkippedCandidate>& skipped) {
    static const std::regex file(R"(^level_(\d+)_problem_(\d+)_sample_(\d+)_kernel\.py$)");
    std::vector<Candidate> out;
    for (const auto& entry : fs::directory_iterator(dir)) {
        std::string name = entry.path().filename().string();
        std::smatch m;
        if (!std::regex_match(name, m, file)) continue;
        int level = std::stoi(m[1]), problem = std::stoi(m[2]), sample = std::stoi(m[3]);
        if (auto code = readable(entry, skipped, level, problem))
            out.push_back(make_candidate(level, problem, sample, *code, entry.path().string()));
    }
    return out;
}

void add_problem_folder(const fs::path& dir, const Problem& p, std::vector<Candidate>& out,
                        std::vector<SkippedCandidate>& skipped) {
    std::vector<fs::directory_entry> files;
    for (const auto& entry : fs::directory_iterator(dir))
        if (entry.path().extension() == ".py") files.push_back(entry);
    std::sort(files.begin(), files.end());
    int sample = 0;
    for (const auto& entry : files) {
        int s = sample++;
        if (auto code = readable(entry, skipped, p.level, p.id))
            out.push_back(make_candidate(p.level, p.id, s, *code, entry.path().string()));
    }
}

std::vector<Candidate> read_problem_folders(const fs::path& dir,
                                            const std::vector<Problem>& problems,
                                            std::vector<SkippedCandidate>& skipped) {
    std::map<std::string, std::vector<const Problem*>> by_name;
    for (const auto& p : problems) by_name[p.name].push_back(&p);
    std::vector<Candidate> out;
    for (const auto& entry : fs::directory_iterator(dir)) {
        if (!entry.is_directory()) continue;
        std::string name = entry.path().filename().string();
        if (auto level_folder = level_of_folder(name)) {
            int level = *level_folder;
            for (const auto& sub : fs::directory_iterator(entry.path())) {
                auto it = by_name.find(sub.path().filename().string());
                if (!sub.is_directory() || it == by_name.end()) continue;
                for (const Problem* p : it->second)
                    if (p->level == level) add_problem_folder(sub.path(), *p, out, skipped);
            }
            continue;
        }
        auto it = by_name.find(name);
        if (it == by_name.end()) continue;
        if (it->second.size() > 1)
            throw UsageError("candidate folder " + entry.path().string() + " matches problem " +
                                 name + " on several levels",
                             "put it under level<L>/" + name + "/");
        add_problem_folder(entry.path(), *it->second.front(), out, skipped);
    }
    return out;
}

std::vector<Candidate> read_candidate_jsonl(const fs::path& file) {
    std::vector<Candidate> out;
    for_each_json_line(
        read_file(file), file.string(), [&](const json& row, const std::string& source) {
            for (const char* column : {"level", "problem_id", "sample_id", "code"})
                if (!row.contains(column) || row[column].is_null())
                    throw UsageError(source + ": no '" + column + "' field",
                                     "candidate rows need level, problem_id, sample_id and code");
            out.push_back(make_candidate(row["level"].get<int>(), row["problem_id"].get<int>(),
                                         row["sample_id"].get<int>(),
                                         row["code"].get<std::string>(), source));
        });
    return out;
}

}  // namespace

CandidateScan scan_candidates(const std::string& spec, const std::vector<Problem>& selected,
                              const std::vector<Problem>& all_problems) {
    CandidateScan scan;
    std::vector<Candidate> all;
    if (spec.rfind("builtin", 0) == 0) {
        std::string backend = spec.size() > 8 && spec[7] == ':' ? spec.substr(8) : "cuda";
        fs::path dir = builtin_suite_dir() / "candidates" / backend;
        if (!fs::is_directory(dir))
            throw UsageError("the built-in suite has no " + backend + " candidates",
                             "use builtin:cpu, builtin:cuda or builtin:triton");
        all = read_run_layout(dir, scan.skipped);
    } else {
        fs::path path(spec);
        std::error_code error;
        if (!fs::exists(path, error))
            throw UsageError("no candidates at " + spec,
                             fs::is_symlink(path, error)
                                 ? "it is a dangling link; give a folder of candidates or a "
                                   ".jsonl file of them"
                                 : "give a folder of candidates or a .jsonl file of them");
        if (!fs::is_directory(path)) {
            all = read_candidate_jsonl(path);
        } else {
            all = read_run_layout(path, scan.skipped);
            if (all.empty() && scan.skipped.empty())
                all = read_problem_folders(path, all_problems, scan.skipped);
        }
    }
    scan.found = all.size() + scan.skipped.size();
    auto holds = [](const std::vector<Problem>& problems, int level, int id) {
        return std::any_of(problems.begin(), problems.end(),
                           [&](const Problem& p) { return p.level == level && p.id == id; });
    };
    for (auto& c : all) {
        if (holds(selected, c.level, c.problem_id)) {
            scan.candidates.push_back(std::move(c));
        } else if (holds(all_problems, c.level, c.problem_id)) {
            ++scan.outside_selection;
        } else {
            scan.skipped.push_back({c.source, c.level, c.problem_id,
                                    "not in the dataset (it has no level " +
                                        std::to_string(c.level) + " problem " +
                                        std::to_string(c.problem_id) + ")"});
        }
    }
    std::sort(scan.candidates.begin(), scan.candidates.end(),
              [](const Candidate& a, const Candidate& b) {
                  return std::tie(a.level, a.problem_id, a.sample_id) <
                         std::tie(b.level, b.problem_id, b.sample_id);
              });
    std::sort(scan.skipped.begin(), scan.skipped.end(),
              [](const SkippedCandidate& a, const SkippedCandidate& b) {
                  return std::tie(a.level, a.problem_id, a.source) <
                         std::tie(b.level, b.problem_id, b.source);
              });
    return scan;
}

std::vector<Candidate> load_candidates(const std::string& spec,
                                       const std::vector<Problem>& problems) {
    return scan_candidates(spec, problems, problems).candidates;
}

}  // namespace kbench::dataset
