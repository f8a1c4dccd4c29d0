#pragma once

#include <string>
#include <vector>

#include "dataset/problem.hpp"

namespace kbench::dataset {

// Candidates for the given problems (others are skipped), from:
// - "builtin:cpu", "builtin:cuda" or "builtin:triton": the built-in suite's candidates;
// - a folder in KernelBench's run layout: level_{L}_problem_{P}_sample_{S}_kernel.py;
// - a folder per problem: <dir>/<problem name>/*.py or <dir>/level<L>/<problem name>/*.py,
//   samples numbered in file-name order;
// - a JSON-lines file of {level, problem_id, sample_id, code}.
// Sorted by level, problem and sample.
std::vector<Candidate> load_candidates(const std::string& spec,
                                       const std::vector<Problem>& problems);

}  // namespace kbench::dataset
