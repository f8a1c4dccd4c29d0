#include "build/worker_package.hpp"

#include <fstream>
#include <map>
#include <sstream>

#include "build/build_cache.hpp"
#include "core/error.hpp"
#include "core/sha256.hpp"

namespace kbench::build {
void verify_worker_package(const fs::path& dir, const std::vector<PackageFile>& expected) {
    if (expected.empty()) return;
    std::error_code ignored;
    for (const auto& entry : fs::recursive_directory_iterator(dir, ignored))
        if (entry.is_directory() && entry.path().filename() == "__pycache__")
            fs::remove_all(entry.path(), ignored);
    std::map<std::string, std::string> want;
    for (const PackageFile& f : expected) want[f.path] = f.sha256;
    std::string hint =
        "rebuild kbench (cmake --build build), or point KBENCH_WORKER_PATH at an "
        "untouched copy; no candidate should be able to write there";
    for (const auto& entry : fs::recursive_directory_iterator(dir)) {
        if (entry.is_directory()) continue;
        std::string rel = fs::relative(entry.path(), dir).string();
        auto it = want.find(rel);
        if (it == want.end())
            throw InfraError(
                "the worker package holds a file kbench did not build: " + (dir / rel).string(),
                hint);
        if (file_sha256(entry.path()) != it->second)
            throw InfraError("the worker package's " + (dir / rel).string() +
                                 " is not the file kbench built (its SHA-256 differs)",
                             hint);
        want.erase(it);
    }
    if (!want.empty())
        throw InfraError("the worker package lacks " + (dir / want.begin()->first).string(), hint);
}

}  // namespace kbench::build
