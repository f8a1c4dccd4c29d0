#include "core/settings.hpp"

#include <cstdlib>
#include <stdexcept>

namespace kbench {

const std::vector<Setting>& all_settings() {
    using K = Setting::Kind;
    static const std::vector<Setting> settings = {
        {"KBENCH_PYTHON", K::user, "--python", "",
         "the Python with torch that runs the workers (default: python3 on PATH)"},
        {"KBENCH_WORKER_PATH", K::user, "", "",
         "the folder of kbench's worker module and analyzer (default: python/ beside kbench, or "
         "lib/kbench/python of an install)"},
        {"KBENCH_CACHE", K::user, "--cache-dir (builds only)", "",
         "kbench's cache folder: builds, datasets, baselines, problem health (default: "
         "$XDG_CACHE_HOME/kbench, else ~/.cache/kbench)"},
        {"KBENCH_CACHE_MAX_GIB", K::user, "kbench cache prune --max-gib", "",
         "the build cache's size after each command that builds (default 10)"},
        {"KBENCH_SUPPORT_DIR", K::user, "", "",
         "where build supports (precompiled headers, per toolchain and GPU) are kept (default: "
         "support/ in the build cache)"},
        {"KBENCH_SUITE", K::user, "", "",
         "the built-in suite's folder (default: that of the install, else of the checkout)"},
        {"KBENCH_DATASETS_DIR", K::user, "", "",
         "where downloaded problem sets are kept (default: datasets/ in the cache folder)"},
        {"KBENCH_KERNELBENCH_URL", K::user, "", "",
         "where KernelBench's problems are downloaded from (default: ScalingIntelligence/"
         "KernelBench on Hugging Face)"},
        {"KBENCH_SANDBOX_USER", K::user, "", "",
         "the user sandboxes run as when kbench runs as root (default nobody)"},
        {"KBENCH_SANDBOX_MEMORY_GIB", K::user, "", "",
         "each sandbox's memory cgroup limit (default: half the machine's memory)"},
        {"KBENCH_SANDBOX_DISK_GIB", K::user, "", "",
         "each sandbox's and builder's own folder, a tmpfs of this size (default 2)"},
        {"KBENCH_SANDBOX_DISABLE", K::user, "", "config.sandbox.missing",
         "sandbox layers to leave off, comma-separated, for diagnosis (every verdict says so)"},
        {"KBENCH_DEVICE_SHARE", K::internal, "", "",
         "a judge's share of the device memory where several judges share a GPU"},
        {"KBENCH_CPU_CORES", K::internal, "", "", "the cores a judge keeps to, comma-separated"},
        {"KBENCH_BUILD_SUPPORT", K::internal, "", "", "the build support a builder uses"},
        {"KBENCH_BUILD_DEVICE", K::internal, "", "", "the device kind a builder builds for"},
        {"KBENCH_PREBUILT", K::internal, "", "",
         "the folder of a sandbox's verified build artefacts"},
        {"KBENCH_DEBUG_CLOCK", K::debug, "", "",
         "the judge prints the protocol's overhead and each request's clock check to its log"},
        {"KBENCH_DEBUG_MEMORY", K::debug, "", "",
         "the judge prints its device memory at each step to its log"},
        {"KBENCH_CHECK_LEAKS", K::debug, "", "",
         "the judge refuses to prepare a problem while a tensor of the last one lives"},
    };
    return settings;
}

std::optional<std::string> setting(std::string_view name) {
    bool known = false;
    for (const Setting& s : all_settings()) known = known || s.name == name;
    if (!known)
        throw std::logic_error("setting " + std::string(name) +
                               " is not in the settings table (core/settings.cpp)");
    const char* value = std::getenv(std::string(name).c_str());
    if (!value || !*value) return std::nullopt;
    return std::string(value);
}

std::string setting_or(std::string_view name, const std::string& fallback) {
    return setting(name).value_or(fallback);
}

std::string settings_help() {
    std::string out = "Environment (each command-line option named takes precedence):\n";
    for (auto kind : {Setting::Kind::user, Setting::Kind::debug, Setting::Kind::internal}) {
        if (kind == Setting::Kind::debug) out += "For diagnosis:\n";
        if (kind == Setting::Kind::internal) out += "Set by kbench for its own processes:\n";
        for (const Setting& s : all_settings()) {
            if (s.kind != kind) continue;
            out += "  " + std::string(s.name) + ": " + std::string(s.about);
            if (!s.option.empty()) out += "; option " + std::string(s.option);
            if (!s.recorded.empty()) out += "; recorded in " + std::string(s.recorded);
            out += "\n";
        }
    }
    return out;
}

}  // namespace kbench
