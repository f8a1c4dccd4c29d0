#pragma once

#include <CLI/CLI.hpp>

#include <functional>

namespace kbench::cli {

// Each command registers its options and returns the function that runs it (exit code).
using Command = std::function<int()>;

Command add_check_command(CLI::App& app);
Command add_eval_command(CLI::App& app);
Command add_dataset_command(CLI::App& app);
Command add_rules_command(CLI::App& app);

}  // namespace kbench::cli
