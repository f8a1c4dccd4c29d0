#include "dataset/problem_set.hpp"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <set>

#include <nlohmann/json.hpp>

#include "build/toolchain.hpp"
#include "core/error.hpp"
#include "dataset/json_lines.hpp"
#include "dataset/problem_file.hpp"
#include "sandbox/process.hpp"

namespace kbench::dataset {
namespace {

using json = nlohmann::json;

std::string strip_py(std::string name) {
    if (name.size() > 3 && name.ends_with(".py")) name.resize(name.size() - 3);
    return name;
}

void sort_and_check(std::vector<Problem>& problems, const std::string& spec) {
    std::sort(problems.begin(), problems.end(), [](const Problem& a, const Problem& b) {
        return std::tie(a.level, a.id) < std::tie(b.level, b.id);
    });
    for (std::size_t i = 1; i < problems.size(); ++i)
        if (problems[i].level == problems[i - 1].level && problems[i].id == problems[i - 1].id)
            throw UsageError(spec + " has two problems with level " +
                                 std::to_string(problems[i].level) + " id " +
                                 std::to_string(problems[i].id) + ": " + problems[i - 1].source +
                                 " and " + problems[i].source,
                             "remove one of them");
}

// One row of the Hugging Face layout; source names the file and line.
Problem problem_from_row(const json& row, const std::string& source) {
    for (const char* column : {"code", "level", "name", "problem_id"})
        if (!row.contains(column) || row[column].is_null())
            throw UsageError(source + ": no '" + column + "' column",
                             "problem rows need code, level, name and problem_id");
    return make_problem(row["level"].get<int>(), row["problem_id"].get<int>(),
                        strip_py(row["name"].get<std::string>()), row["code"].get<std::string>(),
                        source);
}

std::vector<Problem> parse_rows(const std::string& text, const std::string& file) {
    std::vector<Problem> out;
    for_each_json_line(text, file, [&](const json& row, const std::string& source) {
        out.push_back(problem_from_row(row, source));
    });
    return out;
}

bool is_problem_file(const fs::path& file) {
    std::string ext = file.extension().string();
    return ext == ".jsonl" || ext == ".parquet";
}

}  // namespace

std::vector<Problem> read_kernelbench_tree(const fs::path& root) {
    fs::path base = fs::exists(root / "KernelBench") ? root / "KernelBench" : root;
    std::vector<Problem> out;
    static const std::regex numbered(R"(^(\d+)_.*\.py$)");
    for (const auto& dir : fs::directory_iterator(base)) {
        auto level = level_of_folder(dir.path().filename().string());
        if (!dir.is_directory() || !level) continue;
        for (const auto& file : fs::directory_iterator(dir.path())) {
            std::string name = file.path().filename().string();
            std::smatch m;
            if (!std::regex_match(name, m, numbered)) continue;
            out.push_back(make_problem(*level, std::stoi(m[1]), strip_py(name),
                                       read_file(file.path()), file.path().string()));
        }
    }
    return out;
}

std::vector<Problem> read_problem_jsonl(const fs::path& file) {
    return parse_rows(read_file(file), file.string());
}

std::vector<Problem> read_problem_parquet(const fs::path& file, const std::string& python) {
    // The reader is a script of the worker package (kbench_worker/parquet.py).
    fs::path script = build::worker_package_dir() / "kbench_worker" / "parquet.py";
    // Run so that neither the script's folder (the worker package) nor the current one is on
    // the module path, where their files could stand in for modules pyarrow or pandas import.
    static const char* runner =
        "import runpy, sys; del sys.path[0]; sys.argv = sys.argv[1:]; "
        "runpy.run_path(sys.argv[0], run_name='__main__')";
    auto result = sandbox::run_to_completion(
        {python, "-c", runner, script.string(), file.string()}, 300);
    if (!result.status.exited || result.status.code != 0)
        throw UsageError("cannot read " + file.string() + " as Parquet: " + result.err,
                         "Parquet needs pyarrow or pandas in " + python +
                             " (pip install pyarrow), or convert the file to JSON lines");
    return parse_rows(result.out, file.string());
}

fs::path builtin_suite_dir() {
    if (const char* env = std::getenv("KBENCH_SUITE"); env && *env) return fs::path(env);
    fs::path exe_dir = executable_path().parent_path();
    for (const fs::path& candidate : {exe_dir.parent_path() / "share" / "kbench" / "suite",
                                      fs::path(KBENCH_SOURCE_DIR) / "suite"})
        if (fs::exists(candidate / "problems")) return candidate;
    throw UsageError("the built-in suite was not found",
                     "set KBENCH_SUITE to the suite folder of a kbench checkout");
}

std::vector<Problem> load_problems(const std::string& spec, const std::string& python) {
    std::vector<Problem> problems;
    if (spec == "builtin") {
        problems = read_kernelbench_tree(builtin_suite_dir() / "problems");
    } else {
        fs::path path(spec);
        if (!fs::exists(path))
            throw UsageError("no dataset at " + spec,
                             "give builtin, a KernelBench folder, or a .jsonl or .parquet file");
        if (fs::is_directory(path)) {
            problems = read_kernelbench_tree(path);
            if (problems.empty()) {
                // A Hugging Face snapshot: data files anywhere below.
                std::vector<fs::path> files;
                for (const auto& entry : fs::recursive_directory_iterator(path))
                    if (entry.is_regular_file() && is_problem_file(entry.path()))
                        files.push_back(entry.path());
                std::sort(files.begin(), files.end());
                for (const auto& file : files) {
                    auto more = file.extension() == ".jsonl" ? read_problem_jsonl(file)
                                                             : read_problem_parquet(file, python);
                    problems.insert(problems.end(), more.begin(), more.end());
                }
            }
        } else if (path.extension() == ".parquet") {
            problems = read_problem_parquet(path, python);
        } else {
            problems = read_problem_jsonl(path);
        }
    }
    if (problems.empty())
        throw UsageError("no problems found in " + spec,
                         "a KernelBench folder holds level1/ with files like 19_ReLU.py");
    sort_and_check(problems, spec);
    return problems;
}

}  // namespace kbench::dataset
