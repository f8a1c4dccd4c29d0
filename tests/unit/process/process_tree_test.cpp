// Pinning a process tree to a core while the other side is timed: every thread, those started
// meanwhile too, in and out of a sandbox's namespaces.
#include "process/process_tree.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "confinement/lockdown.hpp"
#include "core/files.hpp"

namespace kbench::sandbox {
namespace {

int last_core_of_mine() {
    cpu_set_t mine;
    CPU_ZERO(&mine);
    if (::sched_getaffinity(0, sizeof mine, &mine) != 0) return -1;
    for (int c = CPU_SETSIZE - 1; c >= 0; --c)
        if (CPU_ISSET(c, &mine)) return c;
    return -1;
}

std::string cores_of(pid_t pid, pid_t tid) {
    std::ifstream status("/proc/" + std::to_string(pid) + "/task/" + std::to_string(tid) +
                         "/status");
    for (std::string line; std::getline(status, line);)
        if (line.rfind("Cpus_allowed_list:", 0) == 0) return line.substr(line.find('\t') + 1);
    return "?";
}

// Whether this thread runs on `core` alone and under SCHED_IDLE: '.' if so, '!' if not, written
// to fd (non-blocking: nothing when it is full).
void report_pinned(int core, int fd) {
    cpu_set_t now;
    CPU_ZERO(&now);
    bool pinned = ::sched_getaffinity(0, sizeof now, &now) == 0 && CPU_COUNT(&now) == 1 &&
                  CPU_ISSET(core, &now) && ::sched_getscheduler(0) == SCHED_IDLE;
    (void)!::write(fd, pinned ? "." : "!", 1);
}

// Each thread starts the next and ends: the newest is always younger than any listing.
void thread_chain(int core, int fd) {
    report_pinned(core, fd);
    std::thread(thread_chain, core, fd).detach();
}

}  // namespace

// Every thread of another process and of the process it started, the ones they had and those
// they start after, on the core given and under SCHED_IDLE.
TEST(ProcessAffinity, PinsEveryThreadOfAProcessTreeAndWhatItStartsLater) {
    int core = last_core_of_mine();
    ASSERT_GE(core, 0);
    int go[2];
    ASSERT_EQ(::pipe(go), 0);
    pid_t child = ::fork();
    if (child == 0) {
        std::thread a([] { ::pause(); });
        std::thread b([] { ::pause(); });
        if (::fork() == 0) {
            std::thread c([] { ::pause(); });
            ::pause();
            ::_exit(0);
        }
        char byte;
        // Told to go on once pinned: one more thread, started from a pinned one.
        if (::read(go[0], &byte, 1) == 1) std::thread([] { ::pause(); }).detach();
        ::pause();
        ::_exit(0);
    }
    ::setpgid(child, child);
    auto tree = [&] {
        std::vector<std::pair<pid_t, pid_t>> out;
        std::vector<pid_t> pids{child};
        for (const auto& [pid, name] : kbench::sandbox::descendants_of(child)) pids.push_back(pid);
        for (pid_t pid : pids)
            for (const auto& [tid, name] : kbench::sandbox::threads_of(pid))
                out.emplace_back(pid, tid);
        return out;
    };
    auto wait_for_threads = [&](std::size_t n) {
        for (int i = 0; i < 200 && tree().size() < n; ++i)
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        return tree();
    };
    ASSERT_EQ(wait_for_threads(5).size(), 5u);
    EXPECT_FALSE(kbench::sandbox::unpinned_threads(child, {core}, true).empty());
    std::string why;
    EXPECT_TRUE(kbench::sandbox::pin_process_tree(child, {core}, true, false, &why)) << why;
    ASSERT_EQ(::write(go[1], "x", 1), 1);
    auto threads = wait_for_threads(6);
    EXPECT_EQ(threads.size(), 6u);
    for (const auto& [pid, tid] : threads) {
        EXPECT_EQ(cores_of(pid, tid), std::to_string(core)) << tid;
        EXPECT_EQ(::sched_getscheduler(tid), SCHED_IDLE) << tid;
    }
    EXPECT_TRUE(kbench::sandbox::unpinned_threads(child, {core}, true).empty());
    // Let go to the cores it had, and (where this process may) out of SCHED_IDLE.
    auto mine = kbench::sandbox::cores_of(::getpid());
    kbench::sandbox::release_process_tree(child, mine);
    for (const auto& [pid, tid] : tree()) {
        EXPECT_EQ(kbench::sandbox::cores_of(tid), mine) << tid;
        if (::geteuid() == 0) {
            EXPECT_EQ(::sched_getscheduler(tid), SCHED_OTHER) << tid;
        }
    }
    if (mine.size() > 1) {
        EXPECT_EQ(kbench::sandbox::unpinned_threads(child, {core}, false).size(), tree().size());
    }
    ::kill(-child, SIGKILL);
    ::waitpid(child, nullptr, 0);
    ::close(go[0]);
    ::close(go[1]);
    EXPECT_FALSE(kbench::sandbox::pin_process_tree(child, {core}, true, true, &why));
    EXPECT_NE(why.find("no threads"), std::string::npos) << why;
}

// A tree that never stops starting threads and processes, each started by one that is about to
// end (too short-lived for a listing of /proc to find), root included: what is left of it after
// pin_process_tree with freeze says, in `said`, whether it runs pinned (after what a thread
// checked before the stop and wrote after it). Empty when all went well.
std::string pin_a_churning_tree(pid_t root, int core, int said) {
    std::ostringstream failures;
    auto take = [&] {
        std::string out;
        char buf[4096];
        for (ssize_t n; (n = ::read(said, buf, sizeof buf)) > 0;) out.append(buf, n);
        return out;
    };
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (take().find('!') == std::string::npos) failures << "nothing ran unpinned before; ";
    std::string why;
    if (!kbench::sandbox::pin_process_tree(root, {core}, true, true, &why))
        failures << "not pinned: " << why << "; ";
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    take();
    // At least 100 reports: on a busy machine a tree pinned under SCHED_IDLE gets the CPU only
    // now and then, so they may take a while (up to 10 s).
    std::string after;
    for (int i = 0; i < 100 && after.size() < 100; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        after += take();
    }
    if (after.size() < 100) failures << "only " << after.size() << " reports after the pin; ";
    if (after.find('!') != std::string::npos)
        failures << std::count(after.begin(), after.end(), '!') << " of " << after.size()
                 << " reports unpinned; ";
    auto off = kbench::sandbox::unpinned_threads(root, {core}, true);
    if (!off.empty()) failures << off.size() << " threads off, the first " << off.front();
    return failures.str();
}

// Two chains of threads in one process, a chain of processes in another.
void start_chains(int core, int fd) {
    if (::fork() == 0) {
        std::thread(thread_chain, core, fd).detach();
        std::thread(thread_chain, core, fd).detach();
        ::pause();
        ::_exit(0);
    }
    if (::fork() == 0) {
        for (;;) {
            report_pinned(core, fd);
            if (::fork() != 0) ::_exit(0);
        }
    }
}

TEST(ProcessAffinity, ATreeThatKeepsStartingThreadsAndProcessesIsPinnedWhole) {
    int core = last_core_of_mine();
    ASSERT_GE(core, 0);
    int said[2];
    ASSERT_EQ(::pipe2(said, O_NONBLOCK), 0);
    pid_t child = ::fork();
    if (child == 0) {
        ::setpgid(0, 0);
        // Orphans stay in the tree, as they do below a sandbox's own init.
        ::prctl(PR_SET_CHILD_SUBREAPER, 1);
        start_chains(core, said[1]);
        for (;;) ::waitpid(-1, nullptr, 0);
    }
    ::close(said[1]);
    ::setpgid(child, child);
    EXPECT_EQ(pin_a_churning_tree(child, core, said[0]), "");
    ::kill(-child, SIGKILL);
    ::waitpid(child, nullptr, 0);
    ::close(said[0]);
}

// A process of the tree in a session of its own is scheduled in an autogroup of its own (where
// those are on), beyond SCHED_IDLE's reach: the pin fails, and the check names it.
TEST(ProcessAffinity, AProcessInASessionOfItsOwnIsNamed) {
    int core = last_core_of_mine();
    ASSERT_GE(core, 0);
    pid_t child = ::fork();
    if (child == 0) {
        ::setpgid(0, 0);
        if (::fork() == 0) {
            ::setsid();
            ::pause();
            ::_exit(0);
        }
        ::pause();
        ::_exit(0);
    }
    ::setpgid(child, child);
    std::string session;
    for (int i = 0; i < 200 && session.empty(); ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
        for (const auto& t : kbench::sandbox::unpinned_threads(child, {core}, true))
            if (t.find("session of its own") != std::string::npos) session = t;
    }
    std::string seen;  // what /proc said, should the check miss it
    for (const auto& [pid, name] : kbench::sandbox::descendants_of(child))
        seen += name + " " + std::to_string(pid) + ": " +
                kbench::proc_stat_fields("/proc/" + std::to_string(pid) + "/stat").substr(0, 40) +
                "\n";
    EXPECT_FALSE(session.empty()) << "tree below " << child << ":\n" << seen;
    std::string why;
    EXPECT_FALSE(kbench::sandbox::pin_process_tree(child, {core}, true, true, &why));
    EXPECT_NE(why.find("session of its own"), std::string::npos) << why;
    // Not idle (the reference's side): no matter.
    EXPECT_TRUE(kbench::sandbox::pin_process_tree(child, {core}, false, false, &why)) << why;
    for (const auto& [pid, name] : kbench::sandbox::descendants_of(child)) ::kill(pid, SIGKILL);
    ::kill(-child, SIGKILL);
    ::waitpid(child, nullptr, 0);
}

// kbench's own process leaves the timing cores: every thread it has, and those they start later.
TEST(ProcessAffinity, PlaceThreadsMovesEveryThreadOfAProcess) {
    auto mine = kbench::sandbox::cores_of(::getpid());
    ASSERT_FALSE(mine.empty());
    const std::vector<int> first{mine.front()};
    std::atomic<bool> go{false};
    std::atomic<pid_t> before{0};
    std::atomic<bool> started{false};
    std::vector<int> started_on;
    std::thread waiting([&] {
        before = pid_t(::syscall(SYS_gettid));
        while (!go) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        // Started after the move, by a moved thread: on its starter's cores.
        std::thread([&] {
            started_on = kbench::sandbox::cores_of(pid_t(::syscall(SYS_gettid)));
            started = true;
        }).join();
    });
    while (before == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    EXPECT_TRUE(kbench::sandbox::place_threads(::getpid(), first));
    EXPECT_EQ(kbench::sandbox::cores_of(before), first);
    EXPECT_EQ(kbench::sandbox::cores_of(::getpid()), first);
    go = true;
    waiting.join();
    EXPECT_TRUE(started);
    EXPECT_EQ(started_on, first);
    EXPECT_TRUE(kbench::sandbox::place_threads(::getpid(), mine));
    EXPECT_EQ(kbench::sandbox::cores_of(::getpid()), mine);
    // A process that is gone: nothing to move, nothing failed.
    EXPECT_TRUE(kbench::sandbox::place_threads(pid_t(1) << 22, first));
}

// The same in a sandbox: with a PID namespace its init stops the namespace; without one, the
// sandbox's process group is stopped.
TEST(ProcessAffinity, ASandboxThatKeepsStartingThreadsAndProcessesIsPinnedWhole) {
    int core = last_core_of_mine();
    ASSERT_GE(core, 0);
    for (bool namespaces : {true, false}) {
        LockdownSpec s;
        if (::geteuid() == 0) s.uid = s.gid = 65534;
        s.cpu_cgroup_missing = "none made for this test";
        if (!namespaces) {
            s.off = {{"pid_namespace", "forced off: test"},
                     {"network_namespace", "forced off: test"},
                     {"mount_namespace", "forced off: test"}};
        }
        int said[2];
        ASSERT_EQ(::pipe2(said, O_NONBLOCK), 0);
        int null = ::open("/dev/null", O_RDONLY);
        ConfinedProcess p = spawn_confined(s, {null, said[1], said[1]}, nullptr, [core] {
            start_chains(core, 1);
            for (;;) ::waitpid(-1, nullptr, 0);
            return 0;
        });
        ::close(said[1]);
        ::close(null);
        EXPECT_EQ(pin_a_churning_tree(p.pid, core, said[0]), "")
            << "pid_namespace "
            << (std::count(p.layers.applied.begin(), p.layers.applied.end(), "pid_namespace")
                    ? "on"
                    : "off");
        ::kill(-p.pid, SIGKILL);
        wait_confined(p);
        ::close(said[0]);
    }
}

}  // namespace kbench::sandbox
