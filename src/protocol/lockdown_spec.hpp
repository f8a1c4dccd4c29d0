#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/fields.hpp"

// What a confined process's lockdown is to be (the spec the orchestrator and the zygote send) and
// what it became (the layer report): plain data, applied by confinement/lockdown.
namespace kbench::sandbox {

// The layers that confine a process running candidate code (a sandbox or a builder), in the
// order they are reported: the one table of them. Each is applied where the machine provides it
// (confinement/lockdown.cpp); one it cannot provide is reported with the reason. `kbench rules
// --layers` prints the table, and docs/security.md's layer table is generated from it.
struct LayerInfo {
    std::string_view id;
    // When it is applied: "start" (made as the process starts: its namespaces and what is
    // mounted in them), "cgroup" (it joins a cgroup kbench made for it, before any candidate
    // code) or "self" (it applies it to itself, before any candidate code)
    std::string_view stage;
    std::string_view gives;    // what it gives, for docs/security.md
    std::string_view checked;  // what kbench sees of it from outside (confinement/layer_checks)
};
const std::vector<LayerInfo>& layer_table();
// The layers' ids, in the table's order.
const std::vector<std::string>& lockdown_layers();

// The open-file limit (soft and hard) of a confined process under event_limits.
inline constexpr unsigned kOpenFiles = 1024;

// The files (and folders) a confined process's folder may hold under disk_quota.
inline constexpr unsigned kDiskFiles = 65536;

struct LockdownSpec {
    std::vector<std::string> writable;  // folders it may write: its own scratch
    std::int64_t uid = -1;              // the dedicated user when kbench runs as root, else -1
    std::int64_t gid = -1;
    std::uint64_t memory_bytes = 0;   // its memory limit (0: none)
    std::uint64_t disk_bytes = 0;     // the size of each writable folder (0: no quota)
    std::string cgroup;               // a memory cgroup made for it (folder), or empty
    std::string cgroup_missing;       // why there is none
    std::string pids_cgroup;          // a cgroup that limits its tasks (folder), or empty
    std::string pids_cgroup_missing;  // why there is none
    std::string cpu_cgroup;           // a cgroup that counts its CPU time (folder), or empty
    std::string cpu_cgroup_missing;   // why there is none (empty too: none is made for it)
    // Layers left off, each with why: "forced off: KBENCH_SANDBOX_DISABLE", or the zygote's
    // "CUDA cannot start under it on this machine (...)". Reported as given.
    std::map<std::string, std::string> off;
    std::string identity_missing;  // why no dedicated user, when kbench runs as root
    // Why no IPC namespace is made, where the machine would allow one (empty: it is made).
    std::string ipc_namespace_off;
    // kbench's scratch folder, where every sandbox and builder has a folder of its own: in the
    // process's mount namespace an empty tmpfs covers it and only `writable` and `visible`
    // under it are bound back, so that it never sees another's folder (with Landlock off, as
    // on GPUs where CUDA cannot start under it, the dedicated user could write there). Empty:
    // nothing hidden.
    std::string private_root;
    std::vector<std::string> visible;  // folders under private_root it may still read
    // What it may write under a /proc of its own PID namespace besides, with Landlock: "" nothing,
    // "own" its own process's folder (/proc/PID: CUDA writes there at its start, most likely
    // its threads' names, and does not start where it cannot), "all" all of that /proc.
    std::string proc_writes;

    bool allows(const std::string& layer) const { return !off.count(layer); }
    // Why layer is off (empty where it is not).
    std::string off_reason(const std::string& layer) const;
    json to_json() const;
    static LockdownSpec from_json(const json& j);
};

struct LayerReport {
    std::vector<std::string> applied;
    std::map<std::string, std::string> missing;  // layer -> why it is not there

    void add(const std::string& layer, bool ok, const std::string& why_not);
    json to_json() const;
    static LayerReport from_json(const json& j);
};

}  // namespace kbench::sandbox
