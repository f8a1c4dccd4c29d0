#include "orchestrator/workers/sandbox_policy.hpp"

#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <sstream>

#include "core/error.hpp"
#include "core/settings.hpp"
#include "process/python_run.hpp"

namespace kbench::orchestrator {
namespace {

// The folders a Python's standard library and packages live in.
std::vector<std::string> python_prefixes(const std::string& python) {
    // With the user's environment, as the workers see it.
    auto out = sandbox::run_python({python,
                                    "import sys; print(sys.prefix); print(sys.base_prefix)",
                                    true,
                                    {},
                                    sandbox::PythonIsolation::packages,
                                    30});
    std::vector<std::string> prefixes;
    std::stringstream lines(out.out);
    for (std::string line; std::getline(lines, line);)
        if (!line.empty()) prefixes.push_back(line);
    return prefixes;
}

}  // namespace

SandboxPolicy SandboxPolicy::decide(const std::string& python) {
    SandboxPolicy p;
    std::stringstream disabled(setting_or("KBENCH_SANDBOX_DISABLE", ""));
    for (std::string layer; std::getline(disabled, layer, ',');) {
        if (layer.empty()) continue;
        const auto& layers = sandbox::lockdown_layers();
        if (std::find(layers.begin(), layers.end(), layer) == layers.end()) {
            std::string names;
            for (const std::string& name : layers) names += (names.empty() ? "" : ", ") + name;
            throw UsageError("KBENCH_SANDBOX_DISABLE names '" + layer + "', which is no layer",
                             "use names from: " + names);
        }
        p.off[layer] = "forced off: KBENCH_SANDBOX_DISABLE";
    }

    double gib = std::atof(setting_or("KBENCH_SANDBOX_MEMORY_GIB", "0").c_str());
    p.memory_bytes = gib > 0 ? std::uint64_t(gib * double(1ull << 30))
                             : std::uint64_t(::sysconf(_SC_PHYS_PAGES)) *
                                   std::uint64_t(::sysconf(_SC_PAGESIZE)) / 2;

    double disk_gib = std::atof(setting_or("KBENCH_SANDBOX_DISK_GIB", "2").c_str());
    if (disk_gib <= 0)
        throw UsageError("KBENCH_SANDBOX_DISK_GIB must be a positive number of GiB",
                         "unset it for the default (2), or give a size such as 4");
    p.disk_bytes = std::uint64_t(disk_gib * double(1ull << 30));

    if (::geteuid() != 0 || p.off.count("identity")) return p;
    p.user = setting_or("KBENCH_SANDBOX_USER", "nobody");
    const passwd* pw = ::getpwnam(p.user.c_str());
    if (!pw) {
        if (p.user.find_first_not_of("0123456789") == std::string::npos) {
            p.uid = p.gid = std::atoll(p.user.c_str());
        } else {
            throw UsageError("the sandbox user '" + p.user + "' does not exist",
                             "set KBENCH_SANDBOX_USER to an existing user or a numeric uid");
        }
    } else {
        p.uid = pw->pw_uid;
        p.gid = pw->pw_gid;
    }
    std::vector<std::string> needed = python_prefixes(python);
    needed.push_back(fs::temp_directory_path().string());
    for (const std::string& prefix : needed) {
        if (sandbox::readable_by(prefix, p.uid, p.gid)) continue;
        p.identity_missing = prefix + " is not readable by " + p.user + " (uid " +
                             std::to_string(p.uid) +
                             "), so sandboxes keep uid 0, without capabilities; install the "
                             "Python where that user can read it, or run kbench as another user";
        p.uid = p.gid = -1;
        break;
    }
    return p;
}

sandbox::LockdownSpec SandboxPolicy::lockdown(const fs::path& scratch,
                                              const std::vector<std::string>& visible) const {
    sandbox::LockdownSpec s;
    s.writable = {scratch.string()};
    s.private_root = private_root;
    s.visible = visible;
    s.uid = uid;
    s.gid = gid;
    s.memory_bytes = memory_bytes;
    s.disk_bytes = disk_bytes;
    s.off = off;
    s.identity_missing = identity_missing;
    return s;
}

void SandboxPolicy::hand_over(const fs::path& dir, const fs::path& root) const {
    if (uid < 0) return;
    // Only kbench's own folders, from dir up to root, and only when dir is under root.
    std::string inside = fs::relative(dir, root).string();
    if (!inside.empty() && inside.rfind("..", 0) != 0) {
        for (fs::path up = dir.parent_path();; up = up.parent_path()) {
            struct stat st {};
            if (::stat(up.c_str(), &st) == 0 && (st.st_mode & S_IXOTH) == 0)
                ::chmod(up.c_str(), (st.st_mode & 07777) | S_IXOTH);
            if (up == root || up == up.parent_path()) break;
        }
    }
    hand_over_contents(dir);
}

void SandboxPolicy::hand_over_contents(const fs::path& dir) const {
    if (uid < 0) return;
    (void)!::chown(dir.c_str(), uid_t(uid), gid_t(gid));
    std::error_code ignored;
    for (const auto& entry : fs::recursive_directory_iterator(dir, ignored))
        (void)!::lchown(entry.path().c_str(), uid_t(uid), gid_t(gid));
}

}  // namespace kbench::orchestrator
