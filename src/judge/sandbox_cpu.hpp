#pragma once

#include <sys/types.h>

#include <mutex>
#include <optional>
#include <vector>

#include "confinement/cgroups.hpp"

namespace kbench::worker {

// CPU time of a sandbox's processes: the work one side does while the other side's requests are
// timed, or while the judge works between a sandbox's requests. Its cgroup counts every process
// it ever held, ended ones too, to the microsecond; where it has none, /proc/<pid>/stat of the
// processes listed now and then (its own and those it started, live or reaped into them), in
// ticks, which misses processes that start and end between two listings or are reaped by the
// kernel.
class SandboxCpu {
  public:
    explicit SandboxCpu(pid_t root);

    bool exact() const { return cgroup_.has_value(); }
    // Looks for processes started since (without a cgroup). Both may be called from two threads.
    void refresh();
    double seconds() const;

  private:
    pid_t root_;
    std::optional<sandbox::CgroupCpuClock> cgroup_;
    mutable std::mutex mutex_;
    std::vector<pid_t> pids_;
};

}  // namespace kbench::worker
