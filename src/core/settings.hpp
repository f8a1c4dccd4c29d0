#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kbench {

// Every KBENCH_* environment variable kbench reads or sets, in one table: what it does, the
// command-line option that takes precedence over it, and where a run records it. `kbench --help`
// prints the table (so docs/cli.md has it), and tests/layering.py fails on a KBENCH_* name in
// src/ that the table lacks, or on a getenv of one outside core/settings.cpp.
struct Setting {
    enum class Kind {
        user,      // a user sets it
        internal,  // kbench sets it for its own processes; a user never does
        debug,     // diagnosis: prints or checks more
    };
    std::string_view name;  // KBENCH_CACHE
    Kind kind = Kind::user;
    std::string_view option;    // the command-line option that takes precedence, or ""
    std::string_view recorded;  // where a verdict or run records it, or ""
    std::string_view about;     // one line, with its default
};

const std::vector<Setting>& all_settings();

// The variable's value; none where it is unset or empty. Throws std::logic_error for a name the
// table lacks (a fault of kbench's, caught by its tests).
std::optional<std::string> setting(std::string_view name);
std::string setting_or(std::string_view name, const std::string& fallback);

// The table as text, for `kbench --help`.
std::string settings_help();

}  // namespace kbench
