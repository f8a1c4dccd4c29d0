#pragma once

#include <string>
#include <utility>
#include <vector>

#include "process/process.hpp"

namespace kbench::sandbox {

// Every Python process kbench starts to run a script of its own or a one-line query to
// completion (not its workers, which speak its protocol: WorkerProcess). The embedded
// interpreter of the judge, zygote and sandboxes is reached through runtime/python.hpp instead.
//
// What of the user's environment the Python sees:
// - standard_library: `-I -S -B`: no user site, no PYTHON* variables, no site packages, neither
//   the script's folder nor the current one on the module path, no bytecode written. For
//   scripts that need the standard library only (the static analyzer, the GPU probe, queries).
// - packages: the user's site packages and environment (torch, pyarrow, pandas, as the user
//   installed them), but neither the script's folder nor the current one on the module path,
//   where a file could stand in for a module those import.
enum class PythonIsolation { standard_library, packages };

struct PythonRun {
    std::string python;  // the user's Python (--python, KBENCH_PYTHON)
    // A script's path, or with `code` set, Python source to run as -c does.
    std::string script;
    bool code = false;
    std::vector<std::string> args;
    PythonIsolation isolation = PythonIsolation::standard_library;
    double timeout_s = 30;
    std::string input;  // its standard input
    std::vector<std::pair<std::string, std::string>> env_set;
};

// Runs it to completion (killed after timeout_s); its status, output and (capped) errors.
CommandOutput run_python(const PythonRun& run);

}  // namespace kbench::sandbox
