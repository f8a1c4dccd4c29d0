#include "orchestrator/builds/build_support.hpp"

#include "build/cache_usage.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <fstream>
#include <thread>

#include "build/build_cache.hpp"
#include "core/sha256.hpp"
#include "orchestrator/engine/text.hpp"
#include "process/python_run.hpp"

namespace kbench::orchestrator {
namespace {

// What a file's inode says about it: any write changes its ctime, which no one can set back.
// `newest_ctime` keeps the latest ctime seen.
std::string stat_stamp(const fs::path& path, double& newest_ctime) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return "missing";
    newest_ctime = std::max(newest_ctime, double(st.st_ctim.tv_sec) + 1e-9 * st.st_ctim.tv_nsec);
    return std::to_string(st.st_dev) + " " + std::to_string(st.st_ino) + " " +
           std::to_string(st.st_size) + " " + std::to_string(st.st_mtim.tv_sec) + "." +
           std::to_string(st.st_mtim.tv_nsec) + " " + std::to_string(st.st_ctim.tv_sec) + "." +
           std::to_string(st.st_ctim.tv_nsec);
}

double real_now() {
    struct timespec ts {};
    ::clock_gettime(CLOCK_REALTIME, &ts);
    return double(ts.tv_sec) + 1e-9 * ts.tv_nsec;
}

// Inode times come from a clock that ticks in up to 10 ms steps: a write in the tick of the
// stamp could leave the same ctime. The stamp is therefore taken once every ctime is older than
// a few ticks, so that a later write cannot share one.
constexpr double kTimestampTicks_s = 0.05;

// Every entry of the folder (a file added beside the headers changes its folder's inode too).
std::vector<fs::path> entries_of(const fs::path& dir) {
    std::vector<fs::path> entries = {"."};
    for (const auto& entry : fs::recursive_directory_iterator(dir))
        entries.push_back(fs::relative(entry.path(), dir));
    std::sort(entries.begin() + 1, entries.end());
    return entries;
}

std::string settled_stamp(const fs::path& dir) {
    for (int attempt = 0;; ++attempt) {
        double start = real_now(), newest = 0;
        std::string stamp;
        for (const fs::path& entry : entries_of(dir))
            stamp += entry.string() + " " + stat_stamp(dir / entry, newest) + "\n";
        if (newest < start - kTimestampTicks_s) return stamp;
        if (attempt == 3) return {};  // still being written to: no stamp
        std::this_thread::sleep_for(std::chrono::duration<double>(2 * kTimestampTicks_s));
    }
}

// The files of the folder that its manifest does not name.
std::string unlisted_file(const fs::path& dir, const json& manifest) {
    for (const auto& entry : fs::recursive_directory_iterator(dir)) {
        if (entry.is_directory()) continue;
        std::string name = fs::relative(entry.path(), dir).string();
        if (name != "manifest.json" && !manifest.at("files").contains(name)) return name;
    }
    return {};
}

}  // namespace

bool BuildSupport::builds_extensions(const std::string& source) {
    return source.find("cpp_extension") != std::string::npos ||
           source.find("load_inline") != std::string::npos;
}

const BuildSupportState& BuildSupport::get() {
    std::lock_guard<std::mutex> guard(mutex_);
    if (!state_) {
        try {
            state_ = make_or_check();
        } catch (const std::exception& e) {
            state_ = BuildSupportState{};
            state_->why_none = e.what();
        }
    }
    return *state_;
}

BuildSupportState BuildSupport::make_or_check() {
    BuildSupportState s;
    const BuildSupportOptions& o = options_;
    std::string id =
        sha256_hex("kbench build support 2\n" + o.toolchain + "\n" +
                   std::string(to_string(o.device_kind)) + "\n" + o.architectures + "\n" + o.recipe)
            .substr(0, 20);
    fs::create_directories(o.root);
    fs::path dir = o.root / id;
    build::BuildCache::Lock lock(o.root / (id + ".lock"));
    if (!fs::exists(dir / "manifest.json")) {
        if (o.log)
            o.log(
                "making the build support (a precompiled torch/extension.h), once for this "
                "toolchain and these GPU targets");
        auto start = std::chrono::steady_clock::now();
        fs::path making = o.root / (id + ".making-" + std::to_string(::getpid()));
        std::error_code ignored;
        fs::remove_all(making, ignored);
        fs::remove_all(dir, ignored);  // an earlier attempt's remains
        sandbox::PythonRun run{o.python,
                               o.script.string(),
                               false,
                               {making.string(), std::string(to_string(o.device_kind))},
                               sandbox::PythonIsolation::packages,
                               o.limit_s,
                               {},
                               {{"CUDA_VISIBLE_DEVICES", ""}}};
        if (!o.architectures.empty())
            run.env_set.push_back({"TORCH_CUDA_ARCH_LIST", o.architectures});
        auto out = sandbox::run_python(run);
        if (!(out.status.exited && out.status.code == 0)) {
            fs::remove_all(making, ignored);
            s.why_none = "making it failed (" + out.status.describe() +
                         "): " + capped(last_line(out.err), 600);
            return s;
        }
        fs::rename(making, dir);
        s.made_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
    std::string manifest_text = read_file(dir / "manifest.json");
    json manifest = json::parse(manifest_text);
    // Hashing all of it (gigabytes) costs seconds: a process hashes it only when its files' inodes
    // differ from those recorded by the last full check.
    std::string stamp = settled_stamp(dir);
    fs::path checked = o.root / (id + ".checked");
    std::error_code missing;
    if (stamp.empty() || !fs::exists(checked, missing) || read_file(checked) != stamp) {
        std::string unlisted = unlisted_file(dir, manifest);
        if (!unlisted.empty()) {
            std::error_code ignored;
            fs::remove_all(dir, ignored);
            fs::remove(checked, ignored);
            s.why_none =
                "it holds a file its manifest does not name (" + unlisted + "); it is made again";
            return s;
        }
        for (const auto& [file, hash] : manifest.at("files").items()) {
            ++s.files_hashed;
            if (build::file_sha256(dir / file) != hash.get<std::string>()) {
                // Someone changed it: none of it is used, and the next process makes it again.
                std::error_code ignored;
                fs::remove_all(dir, ignored);
                fs::remove(checked, ignored);
                s.why_none = "its file " + file + " did not match its manifest; it is made again";
                return s;
            }
        }
        fs::path writing = o.root / (id + ".checked-" + std::to_string(::getpid()));
        if (!stamp.empty()) {
            std::ofstream out(writing, std::ios::binary | std::ios::trunc);
            out << stamp;
            out.close();
            fs::rename(writing, checked);
        }
    }
    build::mark_used(checked);  // the cache is pruned least recently used first
    s.dir = dir;
    // The recipe too: a new wrapper may make byte-identical files and still build otherwise.
    s.digest = sha256_hex(manifest_text + "\n" + o.recipe);
    return s;
}

}  // namespace kbench::orchestrator
