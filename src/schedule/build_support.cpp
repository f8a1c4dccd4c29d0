#include "schedule/build_support.hpp"

#include <unistd.h>

#include <chrono>

#include "build/build_cache.hpp"
#include "core/sha256.hpp"
#include "sandbox/process.hpp"
#include "schedule/text.hpp"

namespace kbench::schedule {

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
    std::string id = sha256_hex("kbench build support 1\n" + o.toolchain + "\n" + o.device_kind +
                                "\n" + o.architectures)
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
        std::vector<std::string> argv = {"env", "CUDA_VISIBLE_DEVICES="};
        if (!o.architectures.empty()) argv.push_back("TORCH_CUDA_ARCH_LIST=" + o.architectures);
        argv.insert(argv.end(), {o.python, o.script.string(), making.string(), o.device_kind});
        auto out = sandbox::run_to_completion(argv, o.limit_s);
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
    for (const auto& [file, hash] : manifest.at("files").items()) {
        if (build::file_sha256(dir / file) != hash.get<std::string>()) {
            // Someone changed it: none of it is used, and the next process makes it again.
            std::error_code ignored;
            fs::remove_all(dir, ignored);
            s.why_none = "its file " + file + " did not match its manifest; it is made again";
            return s;
        }
    }
    s.dir = dir;
    s.digest = sha256_hex(manifest_text);
    return s;
}

}  // namespace kbench::schedule
