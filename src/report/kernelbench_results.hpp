#pragma once

#include <vector>

#include <nlohmann/json.hpp>

#include "core/verdict.hpp"

namespace kbench::report {

// KernelBench's eval_results.json: {"<problem_id>": [{sample_id, compiled, correctness,
// metadata, runtime, runtime_stats}, ...]}, times in milliseconds, sorted by problem id.
nlohmann::ordered_json kernelbench_eval_results(const std::vector<Verdict>& verdicts);

}  // namespace kbench::report
