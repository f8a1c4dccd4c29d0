#include "dataset/candidate_set.hpp"

#include <algorithm>
#include <map>
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

std::vector<Candidate> read_run_layout(const fs::path& dir) {
    static const std::regex file(R"(^level_(\d+)_problem_(\d+)_sample_(\d+)_kernel\.py$)");
    std::vector<Candidate> out;
    for (const auto& entry : fs::directory_iterator(dir)) {
        std::string name = entry.path().filename().string();
        std::smatch m;
        if (!entry.is_regular_file() || !std::regex_match(name, m, file)) continue;
        out.push_back(make_candidate(std::stoi(m[1]), std::stoi(m[2]), std::stoi(m[3]),
                                     read_file(entry.path()), entry.path().string()));
    }
    return out;
}

std::vector<fs::path> python_files(const fs::path& dir) {
    std::vector<fs::path> files;
    for (const auto& entry : fs::directory_iterator(dir))
        if (entry.is_regular_file() && entry.path().extension() == ".py")
            files.push_back(entry.path());
    std::sort(files.begin(), files.end());
    return files;
}

void add_problem_folder(const fs::path& dir, const Problem& p, std::vector<Candidate>& out) {
    int sample = 0;
    for (const auto& file : python_files(dir))
        out.push_back(make_candidate(p.level, p.id, sample++, read_file(file), file.string()));
}

std::vector<Candidate> read_problem_folders(const fs::path& dir,
                                            const std::vector<Problem>& problems) {
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
                    if (p->level == level) add_problem_folder(sub.path(), *p, out);
            }
            continue;
        }
        auto it = by_name.find(name);
        if (it == by_name.end()) continue;
        if (it->second.size() > 1)
            throw UsageError("candidate folder " + entry.path().string() + " matches problem " +
                                 name + " on several levels",
                             "put it under level<L>/" + name + "/");
        add_problem_folder(entry.path(), *it->second.front(), out);
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

std::vector<Candidate> load_candidates(const std::string& spec,
                                       const std::vector<Problem>& problems) {
    std::vector<Candidate> all;
    if (spec.rfind("builtin", 0) == 0) {
        std::string backend = spec.size() > 8 && spec[7] == ':' ? spec.substr(8) : "cuda";
        fs::path dir = builtin_suite_dir() / "candidates" / backend;
        if (!fs::is_directory(dir))
            throw UsageError("the built-in suite has no " + backend + " candidates",
                             "use builtin:cpu, builtin:cuda or builtin:triton");
        all = read_run_layout(dir);
    } else {
        fs::path path(spec);
        if (!fs::exists(path))
            throw UsageError("no candidates at " + spec,
                             "give a folder of candidates or a .jsonl file of them");
        if (!fs::is_directory(path)) {
            all = read_candidate_jsonl(path);
        } else {
            all = read_run_layout(path);
            if (all.empty()) all = read_problem_folders(path, problems);
        }
    }
    std::vector<Candidate> out;
    for (auto& c : all)
        if (std::any_of(problems.begin(), problems.end(), [&](const Problem& p) {
                return p.level == c.level && p.id == c.problem_id;
            }))
            out.push_back(std::move(c));
    std::sort(out.begin(), out.end(), [](const Candidate& a, const Candidate& b) {
        return std::tie(a.level, a.problem_id, a.sample_id) <
               std::tie(b.level, b.problem_id, b.sample_id);
    });
    return out;
}

}  // namespace kbench::dataset
