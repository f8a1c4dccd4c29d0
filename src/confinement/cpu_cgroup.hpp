#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

namespace kbench::sandbox {

// A cgroup for each confined process that counts the CPU time of every process it ever held,
// ended ones included (cgroup v2's cpu.stat, or the v1 cpuacct hierarchy's cpuacct.usage): what
// a sandbox did while the other side's requests were timed, without listing its processes. The
// confined process joins it itself, before it gives up its rights.
class CpuCgroups {
  public:
    CpuCgroups();

    bool available() const { return !root_.empty(); }
    const std::string& missing_reason() const { return missing_; }

    // A new cgroup folder; empty (and missing_reason set) on failure.
    std::string make();
    // Removes a cgroup once its processes are gone.
    void remove(const std::string& path);

  private:
    std::string root_;
    std::string missing_;
    unsigned counter_ = 0;
};

// The CPU time counted for a process's kbench cgroup (one made by CpuCgroups or a v2
// MemoryCgroups), found from /proc/<pid>/cgroup.
class CgroupCpuClock {
  public:
    // Empty where the process is in no kbench cgroup that counts CPU time.
    static std::optional<CgroupCpuClock> of(pid_t pid);
    // The cgroup at folder (made by CpuCgroups or a v2 MemoryCgroups); empty where unreadable.
    static std::optional<CgroupCpuClock> at(const std::string& folder);
    // Seconds of CPU its processes used so far; negative once it cannot be read.
    double seconds() const;

  private:
    std::string file_;
    bool v2_ = false;
};

// Removes the empty kbench cgroups under root left by kbench processes that are gone (killed
// before they could remove them): kbench-<pid>-<n> whose pid is no longer alive.
void remove_stale_cgroups(const std::string& root);

// Where the cgroup hierarchies are mounted (from /proc/self/mountinfo): the v2 one, and the v1
// one that has controller; empty where none. Every cgroup mount point, v1 or v2.
std::string cgroup2_mount();
std::string cgroup1_mount(const std::string& controller);
std::vector<std::string> cgroup_mount_points();

// A process's cgroup (proc_file: /proc/<pid>/cgroup) in the v2 hierarchy (controller empty) or
// in the v1 hierarchy that has controller; empty where it has none.
std::string cgroup_path(const std::string& proc_file, const std::string& controller);

// This process's own cgroup folder in the v1 hierarchy that has controller; empty where none.
std::string own_cgroup1_folder(const std::string& controller);

// A new kbench cgroup folder under root, kbench-<pid>-<tag><n> (n counted up, so that
// remove_stale_cgroups can tell whose it is); empty, with why in missing, on failure.
std::string make_cgroup_folder(const std::string& root, const std::string& tag, unsigned& n,
                               std::string& missing);

// Writes text to a cgroup file (a limit, cgroup.procs); false where the kernel refused it.
bool write_cgroup_file(const std::string& path, const std::string& text);

// A folder this process may make cgroups in.
bool writable_dir(const std::string& path);

}  // namespace kbench::sandbox
