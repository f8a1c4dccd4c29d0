#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/fields.hpp"

// What a confined process's lockdown is to be (the spec the orchestrator and the zygote send) and
// what it became (the layer report): plain data, applied by confinement/lockdown.
namespace kbench::sandbox {

// The layers that confine a process running candidate code (a sandbox or a builder). Each is
// applied where the machine provides it; one that it cannot provide is reported with the reason.
//   identity           a dedicated user (kbench run as root) or a user namespace (otherwise)
//   pid_namespace      its own PID namespace: it sees and can signal only its own processes,
//                      and everything it starts dies with it
//   mount_namespace    a /proc of its own namespace and a private /dev/shm; /proc/pressure and
//                      /dev/pts covered (their wake-ups come from kernel threads)
//   network_namespace  no network but an unconfigured loopback
//   ipc_namespace      System V shared memory, semaphores and message queues of its own, gone
//                      with it (without one, a segment it made outlived it, holding memory no
//                      cgroup counts, and the next candidate could read it)
//   landlock           writes only under its scratch folder (and to device files); with newer
//                      kernels no TCP and no signals to processes outside it
//   seccomp            no ptrace, no reading or writing other processes' memory, no new
//                      namespaces, no internet sockets, no io_uring, no kernel keyrings
//   event_limits       no epoll, timerfd, signalfd, Linux AIO or POSIX timers, and at most
//                      kOpenFiles open descriptors: a timer watched through thousands of epoll
//                      (or never-matching poll) registrations made the kernel work at every
//                      expiry, in the interrupt, on the core it was armed on (the timing core
//                      on GPUs) and charged to no process, so no cgroup saw it
//   capabilities       none, and none to gain by exec
//   memory_limit       a memory cgroup of its own
//   pids_limit         at most kMaxTasks processes and threads at once (a pids cgroup, or on
//                      cgroup v2 its memory cgroup): a fork bomb stops there
//   cpu_cgroup         (sandboxes) a cgroup that counts the CPU time of all its processes, ended
//                      ones too: what the judge counts of its work beside the baseline (without
//                      it, the records of the processes it lists, which miss short-lived ones)
//   disk_quota         (with mount_namespace) each folder it may write is a tmpfs of its own of
//                      at most disk_bytes and kDiskFiles files, in its mount namespace only:
//                      every write path (write, fallocate, mmap, a raw syscall) ends at ENOSPC
//                      there, the pages count against its memory cgroup, and the folder is gone
//                      once the process and kbench's descriptor of it are
inline const std::vector<std::string>& lockdown_layers() {
    static const std::vector<std::string> layers = {
        "identity",   "pid_namespace", "mount_namespace", "network_namespace", "ipc_namespace",
        "landlock",   "event_limits",  "seccomp",         "capabilities",      "memory_limit",
        "pids_limit", "cpu_cgroup",    "disk_quota"};
    return layers;
}

// The open-file limit (soft and hard) of a confined process under event_limits.
inline constexpr unsigned kOpenFiles = 1024;

// The files (and folders) a confined process's folder may hold under disk_quota.
inline constexpr unsigned kDiskFiles = 65536;

struct LockdownSpec {
    std::vector<std::string> writable;  // folders it may write: its own scratch
    std::int64_t uid = -1;              // the dedicated user when kbench runs as root, else -1
    std::int64_t gid = -1;
    std::uint64_t memory_bytes = 0;     // its memory limit (0: none)
    std::uint64_t disk_bytes = 0;       // the size of each writable folder (0: no quota)
    std::string cgroup;                 // a memory cgroup made for it (folder), or empty
    std::string cgroup_missing;         // why there is none
    std::string pids_cgroup;            // a cgroup that limits its tasks (folder), or empty
    std::string pids_cgroup_missing;    // why there is none
    std::string cpu_cgroup;             // a cgroup that counts its CPU time (folder), or empty
    std::string cpu_cgroup_missing;     // why there is none (empty too: none is made for it)
    std::vector<std::string> disabled;  // layers forced off, with the reason below
    std::string disabled_reason;
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

    bool allows(const std::string& layer) const;
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
