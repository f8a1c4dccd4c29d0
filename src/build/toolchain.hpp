#pragma once

#include <optional>
#include <string>

#include "core/files.hpp"

namespace kbench::build {

// The Python interpreter that runs workers: --python, else $KBENCH_PYTHON, else python3 on PATH.
std::string find_python(const std::optional<std::string>& option);

// The folder that holds the kbench_worker package: $KBENCH_WORKER_PATH, else next to the
// executable (build tree), else the install layout. Throws UsageError with the fix if absent.
fs::path worker_package_dir();

}  // namespace kbench::build
