#include "build/build_cache.hpp"

#include "build/cache_usage.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <vector>

#include "core/error.hpp"
#include "core/fields.hpp"
#include "core/sha256.hpp"

namespace kbench::build {

std::string file_sha256(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return {};
    Sha256 hash;
    char buffer[1 << 16];
    while (in.read(buffer, sizeof buffer) || in.gcount() > 0)
        hash.update(std::string_view(buffer, std::size_t(in.gcount())));
    return hash.hex_digest();
}

json BuildRecord::to_json() const {
    return json{{"status", std::string(to_string(outcome))},
                {"log", log},
                {"seconds", real_json(seconds)},
                {"files", files}};
}

BuildRecord BuildRecord::from_json(const json& j) {
    Fields f(j, "build record");
    std::optional<BuildOutcome> outcome = parse_build_outcome(f.text("status"));
    if (!outcome) throw ProtocolError("build record: a status of '" + f.text("status") + "'");
    BuildRecord r{*outcome, f.text("log"), f.real("seconds"), {}};
    for (const auto& [path, hash] : f.object("files").items()) {
        if (!hash.is_string()) throw ProtocolError("build record: a file's hash is not text");
        r.files[path] = hash.get<std::string>();
    }
    return r;
}

BuildCache::BuildCache(fs::path root) : root_(std::move(root)) {}

std::string BuildCache::key(const std::string& source, Backend backend, Precision precision,
                            const std::string& toolchain_fingerprint) {
    Sha256 hash;
    hash.update("kbench-build-v1\n");
    hash.update(to_string(backend)).update("\n").update(to_string(precision)).update("\n");
    hash.update(toolchain_fingerprint).update("\n").update(source);
    return hash.hex_digest();
}

fs::path BuildCache::dir(const std::string& key) const {
    return root_ / key.substr(0, 2) / key;
}

fs::path BuildCache::torch_extensions_dir(const std::string& key) const {
    return dir(key) / "torch_extensions";
}

fs::path BuildCache::record_path(const std::string& key) const {
    return dir(key) / "build.json";
}

bool BuildCache::has_record(const std::string& key) const {
    std::error_code ignored;
    return fs::exists(record_path(key), ignored);
}

std::optional<BuildRecord> BuildCache::lookup(const std::string& key, std::string* altered) const {
    fs::path path = record_path(key);
    if (!fs::exists(path)) return std::nullopt;
    BuildRecord record;
    try {
        record = BuildRecord::from_json(json::parse(read_file(path)));
    } catch (const std::exception&) {
        if (altered) *altered = "its record is unreadable";
        return std::nullopt;  // a torn or foreign file: build again
    }
    fs::path ext = torch_extensions_dir(key);
    for (const auto& [file, hash] : record.files) {
        if (file_sha256(ext / file) != hash) {
            if (altered) *altered = (ext / file).string() + " is not the file kbench recorded";
            return std::nullopt;
        }
    }
    // Nothing may have been added to what was recorded either.
    std::error_code ignored;
    if (fs::exists(ext))
        for (const auto& entry : fs::recursive_directory_iterator(ext, ignored))
            if (entry.is_regular_file() &&
                !record.files.count(fs::relative(entry.path(), ext).string())) {
                if (altered) *altered = entry.path().string() + " was added after the build";
                return std::nullopt;
            }
    mark_used(path);  // the cache is pruned least recently used first
    return record;
}

void BuildCache::store(const std::string& key, BuildRecord record, const fs::path& built) const {
    fs::path ext = torch_extensions_dir(key);
    std::error_code ignored;
    fs::remove_all(ext, ignored);
    record.files.clear();
    // Only the modules a sandbox imports (NAME/NAME.so), and only up to kMaxModuleBytes: the rest
    // of a build folder (objects, ninja's files) is never used, and a build is the candidate's
    // code, which could make it as large as its folder's quota. Larger modules are not kept
    // (the sandbox builds them itself, in its own folder).
    std::vector<fs::path> modules;
    std::uintmax_t bytes = 0;
    // The folder itself, were it a link the build made, would lead kbench elsewhere.
    if (!built.empty() && !fs::is_symlink(built, ignored))
        for (auto it = fs::recursive_directory_iterator(built, ignored);
             !ignored && it != fs::recursive_directory_iterator(); it.increment(ignored)) {
            const fs::path& p = it->path();
            if (it->is_symlink() || !it->is_regular_file() || p.extension() != ".so" ||
                p.parent_path().filename() != p.stem())
                continue;
            modules.push_back(p.lexically_relative(built));  // built may be a /proc/self/fd path
            bytes += it->file_size(ignored);
        }
    // Nor where they would leave the cache's disk with less than a command needs to start.
    std::error_code unknown;
    fs::space_info space = fs::space(root_, unknown);
    bool room = unknown || space.available >= bytes + kMinFreeBytes;
    if (bytes <= kMaxModuleBytes && room)
        for (const fs::path& rel : modules) {
            fs::create_directories((ext / rel).parent_path());
            fs::copy_file(built / rel, ext / rel, fs::copy_options::overwrite_existing);
            record.files[rel.string()] = file_sha256(ext / rel);
        }
    write_file_atomic(record_path(key), dump_text(record.to_json(), 2));
}

bool BuildCache::place_modules(const std::string& key, const fs::path& dest,
                               std::string* altered) const {
    auto record = lookup(key, altered);
    if (!record) return false;
    fs::path ext = torch_extensions_dir(key);
    bool placed = false;
    for (const auto& [file, hash] : record->files) {
        fs::path rel(file);
        // torch builds NAME into NAME/NAME.so: that is what a sandbox imports.
        if (rel.extension() != ".so" || rel.parent_path().filename() != rel.stem()) continue;
        fs::path target = dest / rel.parent_path().filename() / rel.filename();
        fs::create_directories(target.parent_path());
        fs::copy_file(ext / rel, target, fs::copy_options::overwrite_existing);
        if (file_sha256(target) != hash) {
            if (altered) *altered = (ext / rel).string() + " changed while it was copied";
            return false;
        }
        placed = true;
    }
    return placed;
}

bool BuildCache::keep_files(const std::string& key, const std::string& set,
                            const fs::path& from) const {
    std::error_code ignored;
    // A link in its place (the candidate's doing) would have kbench copy whatever it names.
    if (fs::is_symlink(from, ignored) || !fs::exists(from) || fs::is_empty(from, ignored))
        return false;
    std::uintmax_t bytes = 0;
    std::size_t count = 0;
    for (fs::recursive_directory_iterator it(from, ignored), end; it != end;
         it.increment(ignored)) {
        if (++count > kMaxKeptFiles) return false;
        if (it->is_regular_file(ignored)) bytes += it->file_size(ignored);
        if (bytes > kMaxKeptBytes) return false;
    }
    auto held = lock(key);
    fs::path to = dir(key) / set;
    fs::remove_all(to, ignored);
    fs::copy(from, to, fs::copy_options::recursive | fs::copy_options::copy_symlinks, ignored);
    json files = json::object();
    for (const auto& entry : fs::recursive_directory_iterator(to, ignored)) {
        if (entry.is_symlink()) {
            fs::remove(entry.path(), ignored);
            continue;
        }
        if (entry.is_regular_file())
            files[fs::relative(entry.path(), to).string()] = file_sha256(entry.path());
    }
    write_file_atomic(dir(key) / (set + ".json"), dump_text(json{{"files", files}}, 2));
    return true;
}

bool BuildCache::place_files(const std::string& key, const std::string& set,
                             const fs::path& dest) const {
    fs::path from = dir(key) / set;
    fs::path record = dir(key) / (set + ".json");
    if (!fs::exists(record)) return false;
    std::map<std::string, std::string> files;
    try {
        json j = json::parse(read_file(record));
        Fields f(j, set + " record");
        for (const auto& [path, hash] : f.object("files").items())
            files[path] = hash.get<std::string>();
    } catch (const std::exception&) {
        return false;
    }
    for (const auto& [file, hash] : files) {
        fs::path target = dest / file;
        std::error_code error;
        fs::create_directories(target.parent_path(), error);
        if (!error) fs::copy_file(from / file, target, fs::copy_options::overwrite_existing, error);
        if (error || file_sha256(target) != hash) {  // missing or changed: none of it is used
            fs::remove_all(dest, error);
            return false;
        }
    }
    return true;
}

BuildCache::Lock BuildCache::lock(const std::string& key) const {
    fs::create_directories(dir(key));
    return Lock(dir(key) / ".lock");
}

BuildCache::Lock::Lock(const fs::path& path) {
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0)
        throw InfraError("cannot open build lock " + path.string() + ": " + std::strerror(errno),
                         "check that the cache folder (KBENCH_CACHE) is writable");
    while (::flock(fd_, LOCK_EX) != 0 && errno == EINTR) {
    }
}

BuildCache::Lock::~Lock() {
    if (fd_ >= 0) ::close(fd_);  // closing releases the lock
}

}  // namespace kbench::build
