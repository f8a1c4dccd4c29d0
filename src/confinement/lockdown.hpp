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

// Processes whose parent chain leads to ancestor (not ancestor itself): pid and command name.
std::vector<std::pair<pid_t, std::string>> descendants_of(pid_t ancestor);

// The processes whose parent is parent.
std::vector<pid_t> children_of(pid_t parent);

// Threads of a process: thread id and name.
std::vector<std::pair<pid_t, std::string>> threads_of(pid_t pid);

// Pins every thread of root and of every process below it to `cores`, and puts them under
// SCHED_IDLE where idle, pass after pass until a pass finds nothing left to do (threads and
// processes started later inherit their starter's). With freeze, the processes below root are
// stopped (SIGSTOP) first, seen stopped, and continued once pinned, so that none can start
// threads faster than the passes pin them. False with why on a failure: root gone, no
// permission, 64 passes that each found new threads, processes that did not stay stopped, or
// (with idle) a process in a session of its own, whose autogroup SCHED_IDLE does not reach.
// Threads of root's tree that are left pinned when the timing ends are named by
// unpinned_threads.
bool pin_process_tree(pid_t root, const std::vector<int>& cores, bool idle, bool freeze,
                      std::string* why = nullptr);

// What a sandbox's own init (with a PID namespace) obeys from outside the namespace only: stop
// every other process of the namespace, or continue them.
int freeze_signal();
int thaw_signal();

// The cores a process may run on (empty if it is gone).
std::vector<int> cores_of(pid_t pid);

// Lets every thread of root's tree run on `cores` again, under SCHED_OTHER where it was put under
// SCHED_IDLE (where this process may: otherwise it stays idle); failures are passed over.
void release_process_tree(pid_t root, const std::vector<int>& cores);

// Lets every thread of process pid (not of its children) run on `cores` only; threads it starts
// later inherit their starter's. False when one could not be moved (a thread that ended meanwhile
// is passed over).
bool place_threads(pid_t pid, const std::vector<int>& cores);

// The threads of root's tree that run elsewhere than on `cores` (or, with idle, not under
// SCHED_IDLE, or in a session of their own): "name (thread T of process P)".
std::vector<std::string> unpinned_threads(pid_t root, const std::vector<int>& cores, bool idle);

// Marks this process as not dumpable: processes of the same user cannot ptrace it or read its
// memory through /proc. Judge, zygote and orchestrator call it at start.
void make_undumpable();

// This process (and what it starts from now on) gives way to the rest: niceness 10 higher and
// SCHED_IDLE, so that it runs only on CPUs nothing else wants and a process of normal priority
// that wakes up never waits for it (where SCHED_IDLE is refused, the niceness alone).
// Async-signal-safe: for a child between fork and exec. Builders call it.
void give_way_to_others();

// Whether uid can read path and every folder above it.
bool readable_by(const std::string& path, std::int64_t uid, std::int64_t gid);

}  // namespace kbench::sandbox
