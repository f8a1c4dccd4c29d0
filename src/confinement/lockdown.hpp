#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/fields.hpp"
#include "protocol/lockdown_spec.hpp"

namespace kbench::sandbox {

// A process running under a lockdown. `pid` is the one to wait for and to kill: killing its
// process group ends the body and, with a PID namespace, everything the body started.
// `body_pid` is the body's process as this process sees it.
struct ConfinedProcess {
    pid_t pid = -1;
    pid_t body_pid = -1;
    int report_fd = -1;  // read end: the layers, then how the body ended
    LayerReport layers;
    // Under disk_quota: a descriptor (O_PATH) of each writable folder's tmpfs, in the order of
    // spec.writable, owned by the caller; through /proc/self/fd/N kbench reaches the folder as
    // the process sees it, for as long as it keeps the descriptor.
    std::vector<int> folders;
};

// Forks a confined process and returns once the body is about to run (layers applied).
// In the body's process: after_fork runs first (Python's after-fork hook), then the layers, then
// fds are arranged (keep[i] becomes descriptor i: 0 stdin, 1 stdout, 2 stderr, 3 the control
// socket; every other descriptor is closed) and body() runs; its value is the exit code.
// Throws std::runtime_error when no process could be made.
ConfinedProcess spawn_confined(const LockdownSpec& spec, const std::vector<int>& keep,
                               const std::function<void()>& after_fork,
                               const std::function<int()>& body, double timeout_s = 30);

// How a confined process ended: the body's wait status, and the names of processes it left
// behind (all killed before this returns).
struct ConfinedEnd {
    int wait_status = 0;
    bool body_status_known = false;
    std::vector<std::string> leftovers;
};

// Waits for the process to end; its namespace is empty when this returns.
ConfinedEnd wait_confined(ConfinedProcess& process);

// What a sandbox's own init (with a PID namespace) obeys from outside the namespace only: stop
// every other process of the namespace, or continue them.
int freeze_signal();
int thaw_signal();

// Marks this process as not dumpable: processes of the same user cannot ptrace it or read its
// memory through /proc. Judge, zygote and orchestrator call it at start.
void make_undumpable();

// Whether uid can read path and every folder above it.
bool readable_by(const std::string& path, std::int64_t uid, std::int64_t gid);

}  // namespace kbench::sandbox
