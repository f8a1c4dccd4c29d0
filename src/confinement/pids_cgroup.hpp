#pragma once

#include <string>

namespace kbench::sandbox {

// How many tasks (processes and threads) a confined process and all it starts may hold at once:
// a fork or thread bomb stops there (EAGAIN) instead of at the machine's own limits, which it
// would share with kbench and the other sandboxes. PyTorch's thread pools hold one thread a core.
inline constexpr unsigned kMaxTasks = 4096;

// A pids cgroup for each confined process, where the machine lets this process make them: the
// v1 pids hierarchy. On cgroup v2, where a process is in one cgroup only, the limit goes into its
// memory cgroup (limit_tasks). The confined process joins its cgroup itself.
class PidsCgroups {
  public:
    PidsCgroups();

    bool available() const { return !root_.empty(); }
    const std::string& missing_reason() const { return missing_; }

    // A new cgroup folder that holds at most max_tasks; empty (and missing_reason set) on
    // failure.
    std::string make(unsigned max_tasks);
    // Removes a cgroup once its processes are gone.
    void remove(const std::string& path);

  private:
    std::string root_;
    std::string missing_;
    unsigned counter_ = 0;
};

// Sets a v2 cgroup's pids.max; empty on success, else why not.
std::string limit_tasks(const std::string& folder, unsigned max_tasks);

}  // namespace kbench::sandbox
