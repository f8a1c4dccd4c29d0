#include "dataset/problem_set.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <regex>
#include <set>

#include <nlohmann/json.hpp>

#include "build/toolchain.hpp"
#include "core/error.hpp"
#include "core/settings.hpp"
#include "dataset/json_lines.hpp"
#include "dataset/problem_file.hpp"
#include "process/python_run.hpp"

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
    const char* hint = "problem rows need code, level, name and problem_id";
    if (!row.is_object()) throw UsageError(source + " is not a JSON object", hint);
    for (const char* column : {"code", "level", "name", "problem_id"})
        if (!row.contains(column) || row[column].is_null())
            throw UsageError(source + ": no '" + column + "' column", hint);
    if (!row["level"].is_number_integer() || !row["problem_id"].is_number_integer() ||
        !row["name"].is_string() || !row["code"].is_string())
        throw UsageError(source + ": level and problem_id must be integers, code and name strings",
                         hint);
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

// The id a problem file's name starts with: 19 for 19_ReLU.py; nullopt for other files.
std::optional<int> problem_number(const std::string& file_name) {
    static const std::regex numbered(R"(^(\d+)_.*\.py$)");
    std::smatch m;
    if (!std::regex_match(file_name, m, numbered)) return std::nullopt;
    try {
        return std::stoi(m[1]);
    } catch (const std::out_of_range&) {
        return std::nullopt;
    }
}

// The numbered problem files (19_ReLU.py) of one level's folder.
void read_level_folder(const fs::path& dir, int level, std::vector<Problem>& out) {
    for (const auto& file : fs::directory_iterator(dir)) {
        std::string name = file.path().filename().string();
        auto id = problem_number(name);
        if (!id || !file.is_regular_file()) continue;
        out.push_back(
            make_problem(level, *id, strip_py(name), read_file(file.path()), file.path().string()));
    }
}

// Whether a folder holds problem files itself (19_ReLU.py), as a level's folder does.
bool holds_problem_files(const fs::path& dir) {
    for (const auto& file : fs::directory_iterator(dir))
        if (file.is_regular_file() && problem_number(file.path().filename().string())) return true;
    return false;
}

// Parquet files begin and end with the four bytes PAR1.
bool has_parquet_marker(const fs::path& file) {
    std::ifstream in(file, std::ios::binary);
    char head[4] = {}, tail[4] = {};
    if (!in.read(head, 4)) return false;
    in.seekg(-4, std::ios::end);
    if (!in.read(tail, 4)) return false;
    return std::memcmp(head, "PAR1", 4) == 0 && std::memcmp(tail, "PAR1", 4) == 0;
}

bool is_problem_file(const fs::path& file) {
    std::string ext = file.extension().string();
    return ext == ".jsonl" || ext == ".parquet";
}

}  // namespace

std::vector<Problem> read_kernelbench_tree(const fs::path& root) {
    fs::path base = fs::is_directory(root / "KernelBench") ? root / "KernelBench" : root;
    std::vector<Problem> out;
    // One level's folder (KernelBench/level1): its name gives the level.
    std::error_code failed;
    fs::path resolved = fs::canonical(base, failed);
    if (auto level = level_of_folder((failed ? base : resolved).filename().string())) {
        read_level_folder(base, *level, out);
        if (!out.empty()) return out;
    }
    // A folder of level folders (KernelBench/level1, KernelBench/level2, ...).
    for (const auto& dir : fs::directory_iterator(base)) {
        auto level = level_of_folder(dir.path().filename().string());
        if (!dir.is_directory() || !level) continue;
        read_level_folder(dir.path(), *level, out);
    }
    return out;
}

std::vector<Problem> read_problem_jsonl(const fs::path& file) {
    return parse_rows(read_file(file), file.string());
}

std::vector<Problem> read_problem_parquet(const fs::path& file, const std::string& python) {
    const std::string columns_hint =
        "give a Parquet file with the columns code, level, name and problem_id (KernelBench's "
        "Hugging Face layout), or the same rows as JSON lines (.jsonl)";
    if (!has_parquet_marker(file))
        throw UsageError(file.string() +
                             " is not a Parquet file: it does not begin and end with PAR1, "
                             "Parquet's marker",
                         columns_hint);
    // The reader is a script of the worker package (kbench_worker/parquet.py), with the
    // user's packages (pyarrow or pandas).
    fs::path script = build::worker_package_dir() / "kbench_worker" / "parquet.py";
    auto result = sandbox::run_python(
        {python, script.string(), false, {file.string()}, sandbox::PythonIsolation::packages, 300});
    if (result.status.exited && result.status.code == 0)
        return parse_rows(result.out, file.string());
    // The reader says what failed in one line, with an exit code for its kind.
    std::string said = last_line(result.err);
    switch (result.status.exited ? result.status.code : -1) {
        case int(ParquetExit::no_reader):
            throw UsageError("cannot read " + file.string() + ": " + said + " (" + python + ")",
                             "install pyarrow (" + python +
                                 " -m pip install pyarrow), or give the problems as JSON lines "
                                 "(.jsonl)");
        case int(ParquetExit::unreadable):
            throw UsageError(file.string() + " is not a readable Parquet file: " + said,
                             "check that the file is whole (download it again), or give the "
                             "problems as JSON lines (.jsonl)");
        case int(ParquetExit::missing_columns):
            throw UsageError(file.string() + " lacks columns of the problem layout: " + said,
                             columns_hint);
        default:
            throw UsageError("the Parquet reader failed on " + file.string() + " (" +
                                 result.status.describe() + (said.empty() ? "" : ": " + said) + ")",
                             "check that " + python +
                                 " runs and imports pyarrow, or give the problems as JSON lines "
                                 "(.jsonl)");
    }
}

fs::path builtin_suite_dir() {
    if (std::optional<std::string> dir = setting("KBENCH_SUITE")) return fs::path(*dir);
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
        } else if (path.extension() == ".parquet" || has_parquet_marker(path)) {
            problems = read_problem_parquet(path, python);
        } else {
            std::string text = read_file(path);
            std::size_t first = text.find_first_not_of(" \t\r\n");
            if (first != std::string::npos && text[first] != '{')
                throw UsageError(spec + " is neither JSON lines nor a Parquet file",
                                 "give a .jsonl file of problem rows (code, level, name, "
                                 "problem_id), a .parquet file with those columns, or a "
                                 "KernelBench folder");
            problems = parse_rows(text, path.string());
        }
    }
    if (problems.empty()) {
        if (fs::is_directory(spec) && holds_problem_files(spec))
            throw UsageError(spec + " holds problem files, but its name gives no level",
                             "put them in a folder named for their level (level1/19_ReLU.py), "
                             "or give the folder that holds level1/, level2/ ...");
        throw UsageError("no problems found in " + spec,
                         "give a folder of level folders (KernelBench/, holding "
                         "level1/19_ReLU.py ...), one level's folder (KernelBench/level1), or a "
                         ".jsonl or .parquet file with the columns code, level, name, "
                         "problem_id");
    }
    sort_and_check(problems, spec);
    return problems;
}

}  // namespace kbench::dataset
