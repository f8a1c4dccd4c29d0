#pragma once

#include <string>
#include <vector>

#include "core/files.hpp"
#include "dataset/problem.hpp"

namespace kbench::dataset {

// Problems from "builtin" (the suite this project ships), a KernelBench tree (a folder holding
// level1/ ... or KernelBench/level1/ ...), a JSON-lines or Parquet file with the Hugging Face
// columns (code, level, name, problem_id), or a folder of such files. Sorted by level and id.
// python runs the Parquet reader (pyarrow or pandas).
std::vector<Problem> load_problems(const std::string& spec, const std::string& python);

// The exit codes of kbench_worker/parquet.py, under its own names (NO_READER, UNREADABLE,
// MISSING_COLUMNS; the unit test ParquetExit.MatchesTheReadersOwn reads them there).
enum class ParquetExit { no_reader = 3, unreadable = 4, missing_columns = 5 };

std::vector<Problem> read_kernelbench_tree(const fs::path& root);
std::vector<Problem> read_problem_jsonl(const fs::path& file);
std::vector<Problem> read_problem_parquet(const fs::path& file, const std::string& python);

// The built-in suite's folder: $KBENCH_SUITE, else installed beside the executable, else the
// source tree this binary was built from.
fs::path builtin_suite_dir();

}  // namespace kbench::dataset
