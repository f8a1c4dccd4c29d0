#include "build/cache_usage.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "core/settings.hpp"

namespace kbench::build {
namespace {

std::uintmax_t disk_bytes(const fs::path& path) {
    std::uintmax_t total = 0;
    std::error_code error;
    auto add = [&](const fs::path& p) {
        struct stat st {};
        if (::lstat(p.c_str(), &st) == 0) total += std::uintmax_t(st.st_blocks) * 512;
    };
    add(path);
    if (!fs::is_directory(fs::symlink_status(path, error))) return total;
    for (auto it = fs::recursive_directory_iterator(
             path, fs::directory_options::skip_permission_denied, error);
         !error && it != fs::recursive_directory_iterator(); it.increment(error))
        add(it->path());
    return total;
}

fs::file_time_type modified(const fs::path& path) {
    std::error_code error;
    auto t = fs::last_write_time(path, error);
    return error ? fs::file_time_type::min() : t;
}

}  // namespace

std::uintmax_t CacheUsage::bytes(const std::string& kind) const {
    std::uintmax_t total = 0;
    for (const CacheEntry& e : entries)
        if (kind.empty() || e.kind == kind) total += e.bytes;
    return total;
}

std::size_t CacheUsage::count(const std::string& kind) const {
    return std::size_t(std::count_if(entries.begin(), entries.end(),
                                     [&](const auto& e) { return e.kind == kind; }));
}

CacheUsage cache_usage(const fs::path& root) {
    CacheUsage usage;
    usage.root = root;
    std::error_code error;
    if (!fs::is_directory(root, error)) return usage;
    for (const auto& top : fs::directory_iterator(root, error)) {
        if (!top.is_directory(error)) continue;
        std::string name = top.path().filename().string();
        if (name == "support") {
            // A support's folder, with its stamp (ID.checked) and lock (ID.lock) beside it.
            for (const auto& s : fs::directory_iterator(top.path(), error)) {
                if (!s.is_directory(error)) continue;
                fs::path stamp = s.path().string() + ".checked";
                usage.entries.push_back({s.path(), "support", disk_bytes(s.path()),
                                         fs::exists(stamp) ? modified(stamp) : modified(s.path())});
            }
        } else if (name.size() == 2) {
            for (const auto& b : fs::directory_iterator(top.path(), error)) {
                if (!b.is_directory(error)) continue;
                fs::path record = b.path() / "build.json";
                usage.entries.push_back(
                    {b.path(), "build", disk_bytes(b.path()),
                     fs::exists(record) ? modified(record) : modified(b.path())});
            }
        }
    }
    std::sort(usage.entries.begin(), usage.entries.end(),
              [](const auto& a, const auto& b) { return a.last_used < b.last_used; });
    return usage;
}

std::uintmax_t cache_bound() {
    std::optional<std::string> text = setting("KBENCH_CACHE_MAX_GIB");
    double gib = text ? std::atof(text->c_str()) : 10.0;
    if (!(gib > 0)) gib = 10.0;
    return std::uintmax_t(gib * double(1ull << 30));
}

Pruned prune_cache(const fs::path& root, std::uintmax_t max_bytes) {
    CacheUsage usage = cache_usage(root);
    std::uintmax_t total = usage.bytes();
    Pruned pruned;
    for (const CacheEntry& e : usage.entries) {
        if (total <= max_bytes) break;
        std::error_code error;
        fs::remove_all(e.path, error);
        if (e.kind == "support") {
            fs::remove(e.path.string() + ".checked", error);
            fs::remove(e.path.string() + ".lock", error);
        }
        total -= std::min(total, e.bytes);
        ++pruned.entries;
        pruned.bytes += e.bytes;
    }
    return pruned;
}

void mark_used(const fs::path& file) {
    std::error_code error;
    fs::last_write_time(file, fs::file_time_type::clock::now(), error);
}

std::string size_text(std::uintmax_t bytes) {
    char text[32];
    double b = double(bytes);
    if (b >= double(1ull << 30))
        std::snprintf(text, sizeof text, "%.2f GiB", b / double(1ull << 30));
    else
        std::snprintf(text, sizeof text, "%.1f MiB", b / double(1ull << 20));
    return text;
}

}  // namespace kbench::build
