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

// A candidate file that is not evaluated, and why: "dangling link to T", "unreadable: ...",
// "not in the dataset".
struct SkippedCandidate {
    std::string source;
    int level = 0;  // 0: not known (a file name that says nothing)
    int problem_id = 0;
    std::string why;
};

struct CandidateScan {
    std::vector<Candidate> candidates;      // for the selected problems, sorted
    std::vector<SkippedCandidate> skipped;  // each to be named to the user
    std::size_t outside_selection = 0;      // for problems of the dataset not selected
    std::size_t found = 0;                  // candidate files or rows seen in all
};

// load_candidates, saying what it skipped: files it could not read (dangling links included)
// and candidates of problems the dataset (all) does not hold.
CandidateScan scan_candidates(const std::string& spec, const std::vector<Problem>& selected,
                              const std::vector<Problem>& all);

}  // namespace kbench::dataset
