#include "process/process_tree.hpp"

#include <dirent.h>
#include <sched.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <thread>

#include "confinement/lockdown.hpp"
#include "confinement/proc_scan.hpp"
#include "core/files.hpp"

namespace kbench::sandbox {

std::vector<std::pair<pid_t, std::string>> descendants_of(pid_t ancestor) {
    std::vector<std::pair<pid_t, std::string>> out;
    std::map<pid_t, pid_t> parents;
    each_process([&](pid_t pid) { parents[pid] = parent_of(pid); });
    for (const auto& [pid, parent] : parents) {
        pid_t p = parent;
        for (int depth = 0; depth < 4096 && p > 1 && p != ancestor; ++depth) {
            auto it = parents.find(p);
            p = it == parents.end() ? 0 : it->second;
        }
        if (p != ancestor || pid == ancestor) continue;
        std::ifstream comm("/proc/" + std::to_string(pid) + "/comm");
        std::string name;
        std::getline(comm, name);
        out.emplace_back(pid, name);
    }
    return out;
}

std::vector<pid_t> children_of(pid_t parent) {
    std::vector<pid_t> out;
    each_process([&](pid_t pid) {
        if (parent_of(pid) == parent) out.push_back(pid);
    });
    return out;
}

std::vector<std::pair<pid_t, std::string>> threads_of(pid_t pid) {
    std::vector<std::pair<pid_t, std::string>> out;
    std::string dir = "/proc/" + std::to_string(pid) + "/task";
    DIR* d = ::opendir(dir.c_str());
    if (!d) return out;
    while (dirent* e = ::readdir(d)) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
        std::ifstream comm(dir + "/" + e->d_name + "/comm");
        std::string name;
        std::getline(comm, name);
        out.emplace_back(pid_t(std::atol(e->d_name)), name);
    }
    ::closedir(d);
    std::sort(out.begin(), out.end());
    return out;
}

namespace {

cpu_set_t cpu_set_of(const std::vector<int>& cores) {
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int c : cores)
        if (c >= 0 && c < CPU_SETSIZE) CPU_SET(c, &set);
    return set;
}

// Every thread of root and of the processes below it: process id, thread id, thread name.
struct TreeThread {
    pid_t pid;
    pid_t tid;
    std::string name;
};
std::vector<TreeThread> threads_in_tree(pid_t root) {
    std::vector<TreeThread> out;
    std::vector<pid_t> processes{root};
    for (const auto& [pid, name] : descendants_of(root)) processes.push_back(pid);
    for (pid_t pid : processes)
        for (auto& [tid, name] : threads_of(pid)) out.push_back({pid, tid, std::move(name)});
    return out;
}

// Whether the thread runs only on `set` (and under SCHED_IDLE where idle, with no reset on
// fork); a thread that ended meanwhile counts as pinned.
bool thread_pinned(pid_t tid, const cpu_set_t& set, bool idle) {
    cpu_set_t now;
    CPU_ZERO(&now);
    if (::sched_getaffinity(tid, sizeof now, &now) != 0) return errno == ESRCH;
    if (!CPU_EQUAL(&now, &set)) return false;
    if (!idle) return true;
    int policy = ::sched_getscheduler(tid);
    return policy == SCHED_IDLE || (policy < 0 && errno == ESRCH);
}

std::vector<pid_t> nspids_of(pid_t pid) {
    std::ifstream status("/proc/" + std::to_string(pid) + "/status");
    for (std::string line; std::getline(status, line);) {
        if (line.rfind("NSpid:", 0) != 0) continue;
        std::istringstream fields(line.substr(6));
        std::vector<pid_t> out;
        for (long n; fields >> n;) out.push_back(pid_t(n));
        return out;
    }
    return {};
}

// The init of a PID namespace that root's child started (root is a sandbox's relay): its pid
// here, or -1.
pid_t namespace_init_of(pid_t root) {
    std::size_t depth = nspids_of(root).size();
    for (pid_t child : children_of(root)) {
        auto ids = nspids_of(child);
        if (depth > 0 && ids.size() > depth && ids.back() == 1) return child;
    }
    return -1;
}

// The state letter of each thread of each process below ancestor.
template <typename F>
void each_thread_state(pid_t ancestor, F&& f) {
    for (const auto& [pid, name] : descendants_of(ancestor))
        for (const auto& [tid, thread] : threads_of(pid)) {
            std::string fields = proc_stat_fields("/proc/" + std::to_string(pid) + "/task/" +
                                                  std::to_string(tid) + "/stat");
            if (!fields.empty()) f(fields[0]);  // else gone
        }
}

// Whether every thread of every process below ancestor has stopped (or cannot run user code
// now: in uninterruptible sleep, or ended).
bool all_stopped(pid_t ancestor) {
    bool all = true;
    each_thread_state(ancestor, [&](char state) {
        if (std::string_view("tTDZXx").find(state) == std::string_view::npos) all = false;
    });
    return all;
}

bool any_stopped(pid_t ancestor) {
    bool any = false;
    each_thread_state(ancestor, [&](char state) { any = any || state == 'T' || state == 't'; });
    return any;
}

// The session a process belongs to (field 6 of its stat), or -1. 0 is a session whose leader is
// outside this PID namespace (a container's, often): a session like any other.
pid_t session_of(pid_t pid) {
    std::istringstream fields(proc_stat_fields("/proc/" + std::to_string(pid) + "/stat"));
    std::string state;
    long ppid = 0, pgrp = 0, session = -1;
    fields >> state >> ppid >> pgrp >> session;
    return pid_t(session);
}

// Processes of root's tree in a session other than root's: with autogroups on (the usual
// default), such a process is scheduled in a group of its own, where SCHED_IDLE no longer
// yields to the baseline's threads.
std::vector<std::string> other_sessions(pid_t root) {
    std::vector<std::string> out;
    pid_t mine = session_of(root);
    for (const auto& [pid, name] : descendants_of(root)) {
        pid_t theirs = session_of(pid);
        if (mine >= 0 && theirs >= 0 && theirs != mine)
            out.push_back(name + " (process " + std::to_string(pid) + ", in a session of its own)");
    }
    return out;
}

// The processes below root stopped, for as long as this lives, and continued after. With a PID
// namespace of the sandbox's own, its init stops the whole namespace (kill(-1) there: a process
// or thread started meanwhile is stopped with its starter), asked by freeze_signal() from
// outside. Without one, root's process group is stopped, and processes that left the group one
// by one. A stopped process can be continued by one not yet stopped (SIGCONT): the stop is sent
// again until every thread is seen stopped, or frozen() is false.
class Freeze {
  public:
    Freeze(pid_t root, bool on) : root_(root) {
        if (!on) return;
        init_ = namespace_init_of(root);
        if (init_ > 0) {
            for (int attempt = 0; attempt < 20 && !frozen_; ++attempt) {
                if (::kill(init_, freeze_signal()) != 0) break;
                frozen_ = wait_until([&] { return all_stopped(init_); }, 50);
            }
            return;
        }
        for (int attempt = 0; attempt < 20 && !frozen_; ++attempt) {
            if (::getpgid(root) == root && ::kill(-root, SIGSTOP) == 0) group_ = true;
            for (const auto& [pid, name] : descendants_of(root)) {
                if (group_ && ::getpgid(pid) == root) continue;
                if (::kill(pid, SIGSTOP) == 0 &&
                    std::find(stopped_.begin(), stopped_.end(), pid) == stopped_.end())
                    stopped_.push_back(pid);
            }
            frozen_ = wait_until([&] { return all_stopped(root); }, 50);
        }
    }
    ~Freeze() {
        if (init_ > 0) ::kill(init_, thaw_signal());
        if (group_) ::kill(-root_, SIGCONT);
        // Only what still descends from root: a pid that ended could name another process.
        if (!stopped_.empty())
            for (const auto& [pid, name] : descendants_of(root_))
                if (std::find(stopped_.begin(), stopped_.end(), pid) != stopped_.end())
                    ::kill(pid, SIGCONT);
        // Continued before the timing starts (the init may have to wait for the core).
        if (init_ > 0 || group_ || !stopped_.empty())
            wait_until([&] { return !any_stopped(root_); }, 200);
    }
    Freeze(const Freeze&) = delete;
    Freeze& operator=(const Freeze&) = delete;
    bool frozen() const { return frozen_; }

  private:
    template <typename F>
    static bool wait_until(F&& done, int milliseconds) {
        auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(milliseconds);
        for (;;) {
            if (done()) return true;
            if (std::chrono::steady_clock::now() >= until) return false;
            std::this_thread::sleep_for(std::chrono::microseconds(200));
        }
    }

    pid_t root_;
    pid_t init_ = -1;
    bool group_ = false;
    bool frozen_ = false;
    std::vector<pid_t> stopped_;
};

}  // namespace

bool pin_process_tree(pid_t root, const std::vector<int>& cores, bool idle, bool freeze,
                      std::string* why) {
    if (cores.empty()) return true;
    const cpu_set_t set = cpu_set_of(cores);
    constexpr int kMaxPasses = 64;
    Freeze frozen(root, freeze);
    if (freeze && !frozen.frozen()) {
        if (why)
            *why = "the processes of " + std::to_string(root) +
                   " did not stay stopped while they were pinned (continued by one another?)";
        return false;
    }
    // Pass after pass until one finds every thread pinned: a thread started meanwhile by one not
    // yet pinned is caught by the next (one started by a pinned thread inherits its core and
    // policy).
    for (int pass = 0; pass < kMaxPasses; ++pass) {
        auto threads = threads_in_tree(root);
        if (threads.empty()) {
            if (why) *why = "process " + std::to_string(root) + " has no threads (gone?)";
            return false;
        }
        bool changed = false;
        for (const TreeThread& t : threads) {
            if (thread_pinned(t.tid, set, idle)) continue;
            changed = true;
            sched_param none{};
            const char* call = "sched_setaffinity";
            int r = ::sched_setaffinity(t.tid, sizeof set, &set);
            if (r == 0 && idle) {
                call = "sched_setscheduler";
                r = ::sched_setscheduler(t.tid, SCHED_IDLE, &none);
            }
            if (r == 0 || errno == ESRCH) continue;
            if (why)
                *why = std::string(call) + " of thread " + std::to_string(t.tid) + " (" + t.name +
                       ") of process " + std::to_string(t.pid) + ": " + std::strerror(errno);
            return false;
        }
        if (!changed) {
            auto apart = idle ? other_sessions(root) : std::vector<std::string>();
            if (apart.empty()) return true;
            if (why) *why = "SCHED_IDLE does not hold for " + apart.front();
            return false;
        }
    }
    if (why)
        *why = "threads of process " + std::to_string(root) + " kept starting faster than " +
               std::to_string(kMaxPasses) + " passes could pin them";
    return false;
}

std::vector<int> cores_of(pid_t pid) {
    std::vector<int> out;
    cpu_set_t set;
    CPU_ZERO(&set);
    if (::sched_getaffinity(pid, sizeof set, &set) != 0) return out;
    for (int c = 0; c < CPU_SETSIZE; ++c)
        if (CPU_ISSET(c, &set)) out.push_back(c);
    return out;
}

void release_process_tree(pid_t root, const std::vector<int>& cores) {
    if (cores.empty()) return;
    const cpu_set_t set = cpu_set_of(cores);
    sched_param none{};
    for (const TreeThread& t : threads_in_tree(root)) {
        ::sched_setaffinity(t.tid, sizeof set, &set);
        if (::sched_getscheduler(t.tid) == SCHED_IDLE)
            ::sched_setscheduler(t.tid, SCHED_OTHER, &none);
    }
}

bool place_threads(pid_t pid, const std::vector<int>& cores) {
    if (cores.empty()) return true;
    const cpu_set_t set = cpu_set_of(cores);
    bool all = true;
    for (const auto& [tid, name] : threads_of(pid))
        if (::sched_setaffinity(tid, sizeof set, &set) != 0 && errno != ESRCH) all = false;
    return all;
}

std::vector<std::string> unpinned_threads(pid_t root, const std::vector<int>& cores, bool idle) {
    std::vector<std::string> out;
    if (cores.empty()) return out;
    const cpu_set_t set = cpu_set_of(cores);
    for (const TreeThread& t : threads_in_tree(root))
        if (!thread_pinned(t.tid, set, idle))
            out.push_back(t.name + " (thread " + std::to_string(t.tid) + " of process " +
                          std::to_string(t.pid) + ")");
    if (idle)
        for (auto& p : other_sessions(root)) out.push_back(std::move(p));
    return out;
}

void give_way_to_others() {
    ::setpriority(PRIO_PROCESS, 0, ::getpriority(PRIO_PROCESS, 0) + 10);
    sched_param none{};
    ::sched_setscheduler(0, SCHED_IDLE, &none);
}

}  // namespace kbench::sandbox
