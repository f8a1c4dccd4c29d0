#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/verdict.hpp"

namespace kbench::report {

// KernelBench's eval_results.json: {"<problem_id>": [{sample_id, compiled, correctness,
// metadata, runtime, runtime_stats, ref_runtime, ref_runtime_stats}, ...]}, times in
// milliseconds, sorted by problem id. Its keys, types and meanings are KernelBench's:
// - runtime is the mean (in every mode; the verdict's headline may be the median);
// - runtime_stats holds mean, std, min, max, num_trials, hardware and device, and kbench's own
//   median, p10, p90, converged and statistic besides;
// - a candidate that does not build or fails at import is compiled: false, with
//   metadata.compilation_error and compilation_error_name; other failures carry runtime_error
//   and runtime_error_name, wrong values correctness_issue and correctness_issue_name.
nlohmann::ordered_json kernelbench_eval_results(const std::vector<Verdict>& verdicts);

// The exception's name as KernelBench writes it ("builtins.RuntimeError"), from the Python
// traceback in text; empty when there is none.
std::string python_error_name(const std::string& text);

// Where kbench writes a run's KernelBench results: RUN/level<L>/eval_results.json for each
// level, and RUN/eval_results.json too when the run has one level (KernelBench's own place).
// Returns the files written, by level (0: RUN/eval_results.json).
std::multimap<int, std::string> write_kernelbench_results(const std::string& run_dir,
                                                          const std::vector<Verdict>& verdicts);

}  // namespace kbench::report
