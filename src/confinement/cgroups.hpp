#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kbench::sandbox {

// How many tasks (processes and threads) a confined process and all it starts may hold at once:
// a fork or thread bomb stops there (EAGAIN) instead of at the machine's own limits, which it
// would share with kbench and the other sandboxes. PyTorch's thread pools hold one thread a core.
inline constexpr unsigned kMaxTasks = 4096;

// The cgroups kbench makes for each confined process, in the hierarchies this process can write,
// found once when it is made (per controller: a machine may mount v1 and v2 side by side):
// - its memory limit: the v1 memory hierarchy, else cgroup v2 (the memory controller enabled
//   below this process's own cgroup, or the nearest ancestor that can have it);
// - its task limit: in its v2 memory cgroup (a process is in one v2 cgroup only), else the v1
//   pids hierarchy;
// - the count of its CPU time, ended processes included (v2's cpu.stat, or v1's cpuacct): in its
//   v2 memory cgroup, else a cgroup of its own (v2, else v1 cpuacct).
// The confined process joins them itself, before it gives up its rights (lockdown.cpp).
class Cgroups {
  public:
    Cgroups();

    // Folders made for one process (on v2 often one folder for all three), each empty where
    // none is, with why.
    struct Made {
        std::string memory, pids, cpu;
        std::string memory_missing, pids_missing, cpu_missing;
    };
    // A memory limit of memory_bytes (0: none asked), a task limit of max_tasks (0: none asked),
    // and a count of its CPU time where count_cpu.
    Made make(std::uint64_t memory_bytes, unsigned max_tasks, bool count_cpu);
    // Removes a process's cgroups once its processes are gone.
    void remove(const Made& made);

    bool memory_v2() const { return memory_v2_; }

  private:
    std::string memory_root_, pids_root_, cpu_root_;  // the folders new cgroups go in
    std::string memory_missing_, pids_missing_, cpu_missing_;
    bool memory_v2_ = false;
    unsigned counter_ = 0;
};

// The CPU time counted for a process's kbench cgroup (one made by Cgroups), found from
// /proc/<pid>/cgroup.
class CgroupCpuClock {
  public:
    // Empty where the process is in no kbench cgroup that counts CPU time.
    static std::optional<CgroupCpuClock> of(pid_t pid);
    // The cgroup at folder (Cgroups::Made::cpu); empty where unreadable.
    static std::optional<CgroupCpuClock> at(const std::string& folder);
    // Seconds of CPU its processes used so far; negative once it cannot be read.
    double seconds() const;

  private:
    std::string file_;
    bool v2_ = false;
};

// Where the cgroup hierarchies are mounted (from /proc/self/mountinfo): the v2 one, and the v1
// one that has controller; empty where none. Every cgroup mount point, v1 or v2.
std::string cgroup2_mount();
std::string cgroup1_mount(const std::string& controller);
std::vector<std::string> cgroup_mount_points();

// A process's cgroup (proc_file: /proc/<pid>/cgroup) in the v2 hierarchy (controller empty) or
// in the v1 hierarchy that has controller; empty where it has none.
std::string cgroup_path(const std::string& proc_file, const std::string& controller);

// Writes text to a cgroup file (a limit, cgroup.procs); false where the kernel refused it.
bool write_cgroup_file(const std::string& path, const std::string& text);

}  // namespace kbench::sandbox
