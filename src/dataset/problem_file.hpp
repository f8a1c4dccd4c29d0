#pragma once

#include <optional>
#include <string>

#include "core/files.hpp"

namespace kbench::dataset {

// What a KernelBench file's path says about it: "level1/19_ReLU.py" is level 1, problem 19,
// named 19_ReLU.
struct ProblemIdentity {
    std::string name;
    std::optional<int> level;
    std::optional<int> id;
};

ProblemIdentity identify_problem_file(const fs::path& path);

}  // namespace kbench::dataset
