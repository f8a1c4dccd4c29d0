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

// The level a folder name stands for: "level1", "level_1", "Level1"; nullopt otherwise.
std::optional<int> level_of_folder(const std::string& name);

}  // namespace kbench::dataset
