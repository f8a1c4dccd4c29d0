#pragma once

#include <map>
#include <optional>
#include <string>

#include "core/config.hpp"
#include "core/files.hpp"
#include "core/status.hpp"

namespace kbench::build {

// What building one candidate produced, kept beside its artefacts.
struct BuildRecord {
    BuildOutcome outcome = BuildOutcome::ok;  // kept as "status" (not a verdict: load decides)
    std::string log;                          // compiler or Python output, capped
    double seconds = 0;
    // Every artefact, relative to the entry's torch_extensions folder, with its SHA-256,
    // recorded by kbench (never by the builder) and checked before every use.
    std::map<std::string, std::string> files;

    json to_json() const;
    static BuildRecord from_json(const json& j);
};

// Content-addressed build cache: one folder per hash of (candidate source, backend, precision,
// toolchain fingerprint). A builder writes only into a scratch folder of its own; kbench moves
// the artefacts in, records their hashes, and checks them each time it hands them out. Nothing
// that runs candidate code can write here.
class BuildCache {
  public:
    explicit BuildCache(fs::path root);

    static std::string key(const std::string& source, Backend backend, Precision precision,
                           const std::string& toolchain_fingerprint);

    fs::path dir(const std::string& key) const;
    fs::path torch_extensions_dir(const std::string& key) const;

    // The record, if its artefacts are all there as recorded. An entry whose artefacts were
    // changed is not returned, and altered says which file (then it is built again).
    std::optional<BuildRecord> lookup(const std::string& key, std::string* altered = nullptr) const;
    // Whether the entry has a record (a build finished), without checking its artefacts.
    bool has_record(const std::string& key) const;

    // Copies the extension modules a build produced (NAME/NAME.so in built, a torch_extensions
    // folder) into the entry, records their hashes with the record, and writes the record.
    // Modules of more than kMaxModuleBytes in all are not kept, nor any that would leave the
    // cache's filesystem with less than kMinFreeBytes free.
    static constexpr std::uintmax_t kMaxModuleBytes = 256ull << 20;
    void store(const std::string& key, BuildRecord record, const fs::path& built = {}) const;

    // Copies the entry's extension modules (*.so, checked against the record) under dest as
    // NAME/NAME.so; false when the entry has none or one fails its check.
    bool place_modules(const std::string& key, const fs::path& dest, std::string* altered) const;

    // A set of files a sandbox made that later sandboxes of the same candidate may reuse (its
    // Triton cache): copied in by kbench with their hashes, checked when handed out. A set larger
    // than kMaxKeptBytes or kMaxKeptFiles is not kept (false): the sandbox writes what it likes
    // there, and the cache outlives the run.
    static constexpr std::uintmax_t kMaxKeptBytes = 64ull << 20;
    static constexpr std::size_t kMaxKeptFiles = 1000;
    bool keep_files(const std::string& key, const std::string& set, const fs::path& from) const;
    // Copies the set under dest if it is all there as recorded; false otherwise.
    bool place_files(const std::string& key, const std::string& set, const fs::path& dest) const;

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
    fs::path record_path(const std::string& key) const;  // the entry's build.json

    fs::path root_;
};

// SHA-256 of a file's bytes.
std::string file_sha256(const fs::path& path);

}  // namespace kbench::build
