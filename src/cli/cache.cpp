// kbench cache: what the build cache holds, and freeing it.
#include <iostream>
#include <memory>

#include "build/cache_usage.hpp"
#include "cli/commands.hpp"
#include "cli/run_options.hpp"
#include "core/error.hpp"

namespace kbench::cli {
namespace {

struct CacheOptions {
    std::optional<std::string> cache_dir;
    std::optional<double> max_gib;  // prune: down to this, else the bound
};

void show(const fs::path& root) {
    build::CacheUsage u = build::cache_usage(root);
    std::cout << "build cache " << root.string() << ": " << build::size_text(u.bytes())
              << " of at most " << build::size_text(build::cache_bound())
              << " (KBENCH_CACHE_MAX_GIB; least recently used entries go first past it)\n"
              << "  candidate builds  " << u.count("build") << ", "
              << build::size_text(u.bytes("build")) << "\n"
              << "  build supports    " << u.count("support") << ", "
              << build::size_text(u.bytes("support"))
              << " (precompiled headers, one a toolchain and GPU targets)\n"
              << "kbench cache prune [--max-gib N] frees it down to its bound (or N GiB); "
                 "kbench cache clear empties it\n";
}

}  // namespace

Command add_cache_command(CLI::App& app) {
    auto o = std::make_shared<CacheOptions>();
    CLI::App* cmd = app.add_subcommand(
        "cache", "What the build cache holds (kbench cache), and freeing it (prune, clear)");
    add_cache_dir_option(cmd, o->cache_dir);
    CLI::App* prune = cmd->add_subcommand(
        "prune", "Remove the least recently used entries until the cache is within its bound");
    add_cache_dir_option(prune, o->cache_dir);
    prune->add_option("--max-gib", o->max_gib, "Down to this many GiB (default: the bound)")
        ->check(CLI::NonNegativeNumber);
    CLI::App* clear = cmd->add_subcommand("clear", "Remove every entry of the build cache");
    add_cache_dir_option(clear, o->cache_dir);
    return [o, prune, clear] {
        fs::path root = build_cache_dir(o->cache_dir);
        if (prune->parsed() || clear->parsed()) {
            std::uintmax_t limit = clear->parsed() ? 0
                                   : o->max_gib ? std::uintmax_t(*o->max_gib * double(1ull << 30))
                                                : build::cache_bound();
            build::Pruned p = build::prune_cache(root, limit);
            std::cout << "removed " << p.entries << " entr" << (p.entries == 1 ? "y" : "ies")
                      << " (" << build::size_text(p.bytes) << ")\n";
        }
        show(root);
        return 0;
    };
}

}  // namespace kbench::cli
