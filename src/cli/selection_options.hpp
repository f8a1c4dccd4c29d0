#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "dataset/problem.hpp"
#include "dataset/selection.hpp"

namespace kbench::cli {

// --dataset, --level, --problems and --names, shared by the commands that read problem sets.
struct SelectionOptions {
    std::string dataset;  // as given; empty: not given (the built-in suite, dataset_spec)
    std::vector<int> levels;
    std::string problems;
    std::vector<std::string> names;
};

void add_selection_options(CLI::App* command, SelectionOptions& options);

// The dataset the options name: --dataset as given, or builtin.
std::string dataset_spec(const SelectionOptions& options);

// --device, --precision and --tf32 of the commands that run references alone (dataset audit,
// baseline).
void add_reference_options(CLI::App* command, std::string& device, std::string& precision,
                           std::string& tf32);

// The selected problems; throws UsageError when none is left.
// all (if given) receives every problem of the dataset.
std::vector<dataset::Problem> selected_problems(const SelectionOptions& options,
                                                const std::string& python,
                                                std::vector<dataset::Problem>* all = nullptr);

}  // namespace kbench::cli
