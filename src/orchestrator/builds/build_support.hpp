#pragma once

#include <functional>
#include <mutex>
#include <optional>
#include <string>

#include "core/config.hpp"
#include "core/files.hpp"

namespace kbench::orchestrator {

// What candidates' extension builds reuse: GCC precompiled headers of torch/extension.h, and the
// manifest that names how CUDA files are built (a header made for each build's code, by
// kbench_worker/extensions.py; kbench_worker/build_support.py says what and why).
// Made by kbench itself, never by a builder, once per toolchain, device kind and GPU targets,
// in a folder of the build cache; its files' hashes are checked against its manifest when it is
// made and whenever its files' inodes (device, number, size, mtime, ctime) differ from those the
// last full check recorded beside it, and the manifest's digest is part of every build key that
// uses it.
struct BuildSupportOptions {
    std::string python;
    fs::path script;  // kbench_worker/build_support.py
    fs::path root;    // where supports are kept (the build cache's "support" folder)
    DeviceKind device_kind = DeviceKind::cpu;
    std::string architectures;  // TORCH_CUDA_ARCH_LIST, for "cuda"
    std::string toolchain;      // what identifies the toolchain (the builders' fingerprint)
    std::string recipe;         // what identifies the code that makes it and uses it
    double limit_s = 900;
    std::function<void(const std::string&)> log;  // told when it starts making one
};

struct BuildSupportState {
    fs::path dir;          // empty: none (builds go as written)
    std::string digest;    // SHA-256 of its manifest and the recipe
    double made_s = 0;     // seconds this process spent making it (0: it was there)
    int files_hashed = 0;  // files this process hashed (0: their inodes were as last checked)
    std::string why_none;
};

class BuildSupport {
  public:
    explicit BuildSupport(BuildSupportOptions options) : options_(std::move(options)) {}

    // The support, made first if it is not there yet; the first call does the work, later
    // calls return its outcome. Never throws: without a support, builds go as written.
    const BuildSupportState& get();

    // Whether a candidate's source may build an extension (only those use the support).
    static bool builds_extensions(const std::string& source);

  private:
    BuildSupportState make_or_check();

    BuildSupportOptions options_;
    std::mutex mutex_;
    std::optional<BuildSupportState> state_;
};

}  // namespace kbench::orchestrator
