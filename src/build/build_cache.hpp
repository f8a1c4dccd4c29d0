#pragma once

#include <optional>
#include <string>

#include "core/config.hpp"
#include "core/files.hpp"

namespace kbench::build {

// What building one candidate produced, kept beside its artefacts.
struct BuildRecord {
    std::string status;  // "ok", "compile_error", or "import_error" (not a verdict: load decides)
    std::string log;     // compiler or Python output, capped
    double seconds = 0;

    json to_json() const;
    static BuildRecord from_json(const json& j);
};

// Content-addressed build cache: one folder per hash of (candidate source, backend, precision,
// toolchain fingerprint), holding torch extension and Triton artefacts and the build record.
class BuildCache {
  public:
    explicit BuildCache(fs::path root);

    static std::string key(const std::string& source, Backend backend, Precision precision,
                           const std::string& toolchain_fingerprint);

    fs::path dir(const std::string& key) const;
    fs::path torch_extensions_dir(const std::string& key) const;
    fs::path triton_dir(const std::string& key) const;

    std::optional<BuildRecord> lookup(const std::string& key) const;
    void store(const std::string& key, const BuildRecord& record) const;

    // An exclusive lock on one key, so that concurrent builds of one source build it once.
    class Lock {
      public:
        explicit Lock(const fs::path& path);
        ~Lock();
        Lock(const Lock&) = delete;
        Lock& operator=(const Lock&) = delete;

      private:
        int fd_ = -1;
    };
    Lock lock(const std::string& key) const;

  private:
    fs::path root_;
};

}  // namespace kbench::build
