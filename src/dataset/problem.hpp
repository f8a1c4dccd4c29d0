#pragma once

#include <optional>
#include <string>

namespace kbench::dataset {

// One reference program: KernelBench's Model, get_inputs and get_init_inputs.
struct Problem {
    int level = 0;
    int id = 0;
    std::string name;  // "19_ReLU"
    std::string code;
    std::string sha256;  // of the code
    std::string source;  // where it was read from, for messages

    std::string label() const;  // "level 1 problem 19 (19_ReLU)"
};

// A candidate program for one problem: KernelBench's ModelNew.
struct Candidate {
    int level = 0;
    int problem_id = 0;
    int sample_id = 0;
    std::string code;
    std::string sha256;
    std::string source;  // a file path, or "FILE:LINE" for a row of a JSONL file
};

Problem make_problem(int level, int id, std::string name, std::string code, std::string source);
Candidate make_candidate(int level, int problem_id, int sample_id, std::string code,
                         std::string source);

}  // namespace kbench::dataset
