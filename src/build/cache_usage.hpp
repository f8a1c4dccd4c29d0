#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/files.hpp"

namespace kbench::build {

// What the build cache holds on disk: each candidate's build and each build support (the
// precompiled headers of one toolchain), with when it was last used.
struct CacheEntry {
    fs::path path;
    std::string kind;  // "build" or "support"
    std::uintmax_t bytes = 0;
    fs::file_time_type last_used;
};

struct CacheUsage {
    fs::path root;
    std::vector<CacheEntry> entries;  // least recently used first
    std::uintmax_t bytes(const std::string& kind = {}) const;
    std::size_t count(const std::string& kind) const;
};

CacheUsage cache_usage(const fs::path& root);

// The size the cache is kept under after each command that builds: KBENCH_CACHE_MAX_GIB
// (default 10 GiB).
std::uintmax_t cache_bound();

// Removes the least recently used entries until the cache holds at most max_bytes; what it
// freed. An entry in use by another kbench is found missing by it and built again.
struct Pruned {
    std::size_t entries = 0;
    std::uintmax_t bytes = 0;
};
Pruned prune_cache(const fs::path& root, std::uintmax_t max_bytes);

// Marks an entry used now (its build record, or a support's stamp), for pruning's order.
void mark_used(const fs::path& file);

// "2.20 GiB", "7.4 MiB".
std::string size_text(std::uintmax_t bytes);

}  // namespace kbench::build
