#pragma once

#include <sys/types.h>

#include <string>
#include <utility>
#include <vector>

// The processes and threads below a process, as /proc shows them, and where they may run: the
// judge, the zygote and the orchestrator list a sandbox's processes, pin them to a core while the
// other side is timed, and let builders give way.
namespace kbench::sandbox {

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

// This process (and what it starts from now on) gives way to the rest: niceness 10 higher and
// SCHED_IDLE, so that it runs only on CPUs nothing else wants and a process of normal priority
// that wakes up never waits for it (where SCHED_IDLE is refused, the niceness alone).
// Async-signal-safe: for a child between fork and exec. Builders call it.
void give_way_to_others();

}  // namespace kbench::sandbox
