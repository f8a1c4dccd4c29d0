#pragma once

#include <CLI/CLI.hpp>

namespace kbench::cli {

// Reads the command line before the parser does: a command or an option the command does not
// have is a UsageError that names it and the nearest valid one ("unknown option --devcie for
// kbench check; did you mean --device?"), where the parser would take it for a positional
// argument or say only that a subcommand is required.
void check_command_words(CLI::App& app, int argc, const char* const* argv);

}  // namespace kbench::cli
