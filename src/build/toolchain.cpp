#include "build/toolchain.hpp"

#include <unistd.h>

#include <cstdlib>
#include <sstream>

#include "core/error.hpp"
#include "core/settings.hpp"

namespace kbench::build {

std::string find_python(const std::optional<std::string>& option) {
    if (option && !option->empty()) return *option;
    if (std::optional<std::string> python = setting("KBENCH_PYTHON")) return *python;
    if (const char* path = std::getenv("PATH")) {
        std::stringstream dirs(path);
        std::string dir;
        while (std::getline(dirs, dir, ':')) {
            fs::path candidate = fs::path(dir.empty() ? "." : dir) / "python3";
            if (::access(candidate.c_str(), X_OK) == 0) return candidate.string();
        }
    }
    throw UsageError("no python3 found on PATH",
                     "pass --python /path/to/python3 or set KBENCH_PYTHON to a Python with torch");
}

fs::path worker_package_dir() {
    if (std::optional<std::string> dir = setting("KBENCH_WORKER_PATH")) return fs::path(*dir);
    fs::path exe_dir = executable_path().parent_path();
    for (const fs::path& candidate :
         {exe_dir / "python", exe_dir.parent_path() / "lib" / "kbench" / "python"}) {
        if (fs::exists(candidate / "kbench_worker" / "__init__.py")) return candidate;
    }
    throw UsageError("the kbench worker module was not found next to " + exe_dir.string(),
                     "build it (cmake --build build) or set KBENCH_WORKER_PATH to the folder "
                     "that holds kbench_worker/");
}

}  // namespace kbench::build
