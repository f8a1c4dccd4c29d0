#pragma once

#include <string>
#include <vector>

#include "core/files.hpp"

namespace kbench::build {

// A file of the worker package (relative to the folder on PYTHONPATH) and its SHA-256.
struct PackageFile {
    std::string path;
    std::string sha256;
};

// The worker package as it was built, compiled into kbench itself, so that nothing a candidate
// can write stands between kbench and what its workers run. Empty where no worker was built.
const std::vector<PackageFile>& built_worker_package();

// Checks that dir holds exactly the built package: every file there, none changed, none added
// (a module dropped beside kbench_worker/ would be imported in place of the real one). Stale
// bytecode caches, which Python would load in place of a source, are removed first. Throws
// InfraError naming the first difference.
void verify_worker_package(const fs::path& dir, const std::vector<PackageFile>& expected);

}  // namespace kbench::build
