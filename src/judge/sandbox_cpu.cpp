#include "judge/sandbox_cpu.hpp"

#include <unistd.h>

#include <algorithm>
#include <sstream>
#include <string>

#include "core/files.hpp"
#include "process/process_tree.hpp"

namespace kbench::worker {
namespace {

double ticks_of(pid_t pid) {
    // After the command's closing parenthesis: state (field 3) ... utime, stime, cutime, cstime
    // (fields 14-17).
    std::istringstream fields(proc_stat_fields("/proc/" + std::to_string(pid) + "/stat"));
    std::string skipped;
    for (int n = 3; n < 14; ++n) fields >> skipped;
    double utime = 0, stime = 0, cutime = 0, cstime = 0;
    if (!(fields >> utime >> stime >> cutime >> cstime)) return 0;
    return utime + stime + cutime + cstime;
}

}  // namespace

SandboxCpu::SandboxCpu(pid_t root) : root_(root), cgroup_(sandbox::CgroupCpuClock::of(root)) {
    refresh();
}

void SandboxCpu::refresh() {
    if (cgroup_) return;
    std::vector<pid_t> pids = {root_};
    for (const auto& [pid, name] : sandbox::descendants_of(root_)) pids.push_back(pid);
    std::lock_guard<std::mutex> hold(mutex_);
    pids_ = std::move(pids);
}

double SandboxCpu::seconds() const {
    if (cgroup_) return std::max(0.0, cgroup_->seconds());
    static const double tick = double(::sysconf(_SC_CLK_TCK));
    std::vector<pid_t> pids;
    {
        std::lock_guard<std::mutex> hold(mutex_);
        pids = pids_;
    }
    double total = 0;
    for (pid_t pid : pids) total += ticks_of(pid);
    return total / tick;
}

}  // namespace kbench::worker
