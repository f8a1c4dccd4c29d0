#include "build/build_cache.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/error.hpp"
#include "core/sha256.hpp"

namespace kbench::build {

json BuildRecord::to_json() const {
    return json{{"status", status}, {"log", log}, {"seconds", seconds}};
}

BuildRecord BuildRecord::from_json(const json& j) {
    return {j.value("status", std::string()), j.value("log", std::string()),
            j.value("seconds", 0.0)};
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

fs::path BuildCache::triton_dir(const std::string& key) const {
    return dir(key) / "triton";
}

std::optional<BuildRecord> BuildCache::lookup(const std::string& key) const {
    fs::path path = dir(key) / "build.json";
    if (!fs::exists(path)) return std::nullopt;
    try {
        return BuildRecord::from_json(json::parse(read_file(path)));
    } catch (const std::exception&) {
        return std::nullopt;  // a torn or foreign file: build again
    }
}

void BuildCache::store(const std::string& key, const BuildRecord& record) const {
    write_file_atomic(dir(key) / "build.json", record.to_json().dump(2));
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
