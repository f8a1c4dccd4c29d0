#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <string>

namespace kbench::cli {

// Each command registers its options and returns the function that runs it (exit code).
using Command = std::function<int()>;

// command_line: how kbench was invoked (for "run the same command again").
Command add_check_command(CLI::App& app);
Command add_eval_command(CLI::App& app, const std::string& command_line);
Command add_dataset_command(CLI::App& app);
Command add_rules_command(CLI::App& app);
Command add_generate_command(CLI::App& app, const std::string& command_line);
Command add_refine_command(CLI::App& app, const std::string& command_line);
Command add_prompt_command(CLI::App& app);
Command add_score_command(CLI::App& app);
Command add_report_command(CLI::App& app);
Command add_baseline_command(CLI::App& app);
Command add_cache_command(CLI::App& app);
Command add_serve_command(CLI::App& app);

}  // namespace kbench::cli
