#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "confinement/lockdown.hpp"
#include "core/files.hpp"

namespace kbench::orchestrator {

// How one run confines the processes that run candidate code, decided before the first starts.
struct SandboxPolicy {
    std::int64_t uid = -1;  // the dedicated user (kbench run as root), else -1
    std::int64_t gid = -1;
    std::string user;
    std::string identity_missing;            // why there is no dedicated user, when kbench is root
    std::map<std::string, std::string> off;  // layers forced off, each with why
    std::uint64_t memory_bytes = 0;
    std::uint64_t disk_bytes = 0;  // each process's own folder: a tmpfs of this size
    // kbench's scratch folder for the command: a process sees only its own folder in it (and
    // the read-only ones it is given), never another sandbox's or builder's. Empty: not hidden.
    std::string private_root;

    // From the environment: KBENCH_SANDBOX_USER (default nobody; used when kbench runs as
    // root and that user can read the Python environment), KBENCH_SANDBOX_MEMORY_GIB (default
    // half the machine's memory), KBENCH_SANDBOX_DISK_GIB (each sandbox's and builder's folder,
    // default 2), KBENCH_SANDBOX_DISABLE (layers to leave off, comma-separated:
    // for diagnosis; every verdict then says so). Throws UsageError for a layer or user that
    // does not exist.
    static SandboxPolicy decide(const std::string& python);

    // The lockdown of a process whose own folder is scratch and which may also read `visible`.
    sandbox::LockdownSpec lockdown(const fs::path& scratch,
                                   const std::vector<std::string>& visible = {}) const;

    // Makes dir (and what is in it) the dedicated user's, and kbench's own folders between it
    // and root (a scratch folder kbench made) passable.
    void hand_over(const fs::path& dir, const fs::path& root) const;
    // Makes what is in dir (and dir) the dedicated user's.
    void hand_over_contents(const fs::path& dir) const;
};

}  // namespace kbench::orchestrator
