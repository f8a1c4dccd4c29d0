#include "protocol/lockdown_spec.hpp"

#include <algorithm>

#include "core/error.hpp"

namespace kbench::sandbox {

const std::vector<LayerInfo>& layer_table() {
    static const std::vector<LayerInfo> layers = {
        {"identity", "self",
         "under root, a dedicated user (`KBENCH_SANDBOX_USER`, default `nobody`), if it can read "
         "the Python environment (else uid 0 without capabilities, and the reason); otherwise a "
         "user namespace",
         "under root, its user ids in `/proc/PID/status`; otherwise its user namespace"},
        {"pid_namespace", "start",
         "its own: it sees and can signal only its own processes, everything it starts dies with "
         "it, and kbench waits until the namespace is empty before it times anything else. "
         "Without one, its init is a child subreaper that kills whatever comes to it",
         "its `/proc/PID/ns/pid` is not kbench's"},
        {"mount_namespace", "start",
         "a `/proc` of its own namespace, a private `/dev/shm`, an empty read-only `/dev/mqueue` "
         "where the machine mounts one (its queues are the host's), `/proc/pressure` and "
         "`/dev/pts` covered likewise (see `event_limits`), every cgroup mount covered by an "
         "empty read-only folder once it has joined its cgroups, and kbench's scratch folder "
         "covered by an empty one with only its own folder (and the build support it reads, "
         "remounted read-only) in it",
         "its `/proc/PID/ns/mnt` is not kbench's"},
        {"network_namespace", "start", "no network but an unconfigured loopback",
         "its `/proc/PID/ns/net` is not kbench's"},
        {"ipc_namespace", "start",
         "System V shared memory, semaphores and message queues of its own, gone with it "
         "(without one, a segment it made outlived it, holding memory no cgroup counts, and the "
         "next candidate could read it); on GPUs too, where the judge's buffers reach the "
         "sandbox as file descriptors",
         "its `/proc/PID/ns/ipc` is not kbench's"},
        {"landlock", "self",
         "writes only under its scratch folder (and its private `/dev/shm` and device files; on "
         "GPUs its own `/proc/PID` too, which CUDA writes at its start); with Landlock ABI 4 no "
         "TCP, with ABI 6 no signals or abstract sockets beyond itself",
         "`NoNewPrivs: 1` (its precondition; a Landlock domain leaves no trace in `/proc`)"},
        {"event_limits", "self",
         "no epoll, timerfd, signalfd, Linux AIO or POSIX timers (EPERM), at most 1024 open "
         "descriptors, a limit it cannot raise; with its mount namespace, no pressure-stall "
         "triggers or pseudo-terminals (a timer watched through thousands of registrations made "
         "the kernel work at every expiry, charged to no process)",
         "its open-file limits in `/proc/PID/limits`"},
        {"seccomp", "self",
         "no ptrace, no `process_vm_*`, `kcmp`, `pidfd_getfd`, perf events, BPF, userfaultfd, "
         "keyrings, mounts or new namespaces, io_uring, internet or packet sockets, no second "
         "mapping of shared pages (`mremap` with an old size of 0), no `clone3` (ENOSYS), no "
         "`sched_setaffinity`, `sched_setscheduler` or `sched_setattr`",
         "`Seccomp: 2` in `/proc/PID/status`"},
        {"capabilities", "self", "none, and none to regain through exec; `no_new_privs` always",
         "`CapEff` and `CapPrm` empty and `NoNewPrivs: 1`"},
        {"memory_limit", "cgroup",
         "a memory cgroup of its own (half the machine's memory, or `KBENCH_SANDBOX_MEMORY_GIB`), "
         "where a cgroup can be made; the kernel's OOM killer picks sandboxes first in any case. "
         "On a GPU the sandbox's PyTorch allocator is capped (a soft cap: a candidate can lift "
         "it; see [memory.md](memory.md))",
         "its `/proc/PID/cgroup` names the cgroup made for it"},
        {"pids_limit", "cgroup",
         "at most 4096 tasks (processes and threads) at once, in a v1 `pids` cgroup of its own "
         "or, on cgroup v2, in its memory cgroup: a fork or thread bomb stops there (EAGAIN) "
         "instead of taking the machine's process table",
         "its `/proc/PID/cgroup` names the cgroup made for it"},
        {"cpu_cgroup", "cgroup",
         "(sandboxes) a cgroup that counts the CPU time of every process the sandbox ever held, "
         "ended ones too (cgroup v2's `cpu.stat`, or the v1 `cpuacct` hierarchy): what the judge "
         "counts of its work beside the baseline. On cgroup v2 its memory cgroup serves",
         "its `/proc/PID/cgroup` names the cgroup made for it"},
        {"disk_quota", "start",
         "(with `mount_namespace`) its folder is a tmpfs of its own, 2 GiB "
         "(`KBENCH_SANDBOX_DISK_GIB`) and 65536 files, that only it and kbench see: every write "
         "path ends at ENOSPC there, and the pages count against its memory cgroup",
         "a tmpfs at its folder in its `/proc/PID/mountinfo`"},
    };
    return layers;
}

const std::vector<std::string>& lockdown_layers() {
    static const std::vector<std::string> ids = [] {
        std::vector<std::string> out;
        for (const LayerInfo& l : layer_table()) out.emplace_back(l.id);
        return out;
    }();
    return ids;
}

std::string LockdownSpec::off_reason(const std::string& layer) const {
    auto it = off.find(layer);
    return it == off.end() ? std::string() : it->second;
}

json LockdownSpec::to_json() const {
    return json{{"writable", writable},
                {"private_root", private_root},
                {"visible", visible},
                {"uid", uid},
                {"gid", gid},
                {"memory_bytes", memory_bytes},
                {"disk_bytes", disk_bytes},
                {"cgroup", cgroup},
                {"cgroup_missing", cgroup_missing},
                {"pids_cgroup", pids_cgroup},
                {"pids_cgroup_missing", pids_cgroup_missing},
                {"cpu_cgroup", cpu_cgroup},
                {"cpu_cgroup_missing", cpu_cgroup_missing},
                {"off", off},
                {"identity_missing", identity_missing},
                {"ipc_namespace_off", ipc_namespace_off},
                {"proc_writes", proc_writes}};
}

LockdownSpec LockdownSpec::from_json(const json& j) {
    Fields f(j, "lockdown");
    LockdownSpec s;
    s.writable = f.texts("writable");
    s.private_root = f.text("private_root");
    s.visible = f.texts("visible");
    s.uid = f.integer("uid");
    s.gid = f.integer("gid");
    s.memory_bytes = f.count("memory_bytes");
    s.disk_bytes = f.count("disk_bytes");
    s.cgroup = f.text("cgroup");
    s.cgroup_missing = f.text("cgroup_missing");
    s.pids_cgroup = f.text("pids_cgroup");
    s.pids_cgroup_missing = f.text("pids_cgroup_missing");
    s.cpu_cgroup = f.text("cpu_cgroup");
    s.cpu_cgroup_missing = f.text("cpu_cgroup_missing");
    for (const auto& [layer, why] : f.object("off").items()) {
        if (!why.is_string()) throw ProtocolError("lockdown: reason for " + layer + " is not text");
        s.off[layer] = why.get<std::string>();
    }
    s.identity_missing = f.text("identity_missing");
    s.ipc_namespace_off = f.text("ipc_namespace_off");
    s.proc_writes = f.text("proc_writes");
    return s;
}

void LayerReport::add(const std::string& layer, bool ok, const std::string& why_not) {
    if (ok)
        applied.push_back(layer);
    else
        missing[layer] = why_not.empty() ? "not available" : why_not;
}

json LayerReport::to_json() const {
    return json{{"applied", applied}, {"missing", missing}};
}

LayerReport LayerReport::from_json(const json& j) {
    Fields f(j, "layer report");
    LayerReport r;
    r.applied = f.texts("applied");
    for (const auto& [layer, why] : f.object("missing").items()) {
        if (!why.is_string())
            throw ProtocolError("layer report: reason for " + layer + " is not text");
        r.missing[layer] = why.get<std::string>();
    }
    return r;
}

}  // namespace kbench::sandbox
