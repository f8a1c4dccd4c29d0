#pragma once

#include <sys/types.h>

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "core/files.hpp"
#include "sandbox/channel.hpp"
#include "sandbox/process.hpp"

namespace kbench::schedule {

// Where and how worker processes run.
struct WorkerEnvironment {
    std::string python;               // interpreter with torch
    fs::path worker_package_dir;      // holds kbench_worker/
    std::string device_kind = "cpu";  // "cpu" or "cuda"
    std::string visible_gpu;          // CUDA_VISIBLE_DEVICES for workers of a GPU
    std::vector<int> cpu_cores;       // where the workers may run (empty: anywhere); their
                                      // PyTorch uses as many threads
    fs::path log_dir;                 // worker logs
};

// A long-lived trusted worker (judge or zygote): python -m kbench_worker ROLE 3 DEVICE, with a
// socket on fd 3 and its output in a log file.
class WorkerProcess {
  public:
    // name: for the log file and messages (default: the role).
    WorkerProcess(const WorkerEnvironment& env, const std::string& role,
                  const std::string& name = "");
    ~WorkerProcess();
    WorkerProcess(const WorkerProcess&) = delete;
    WorkerProcess& operator=(const WorkerProcess&) = delete;

    // Waits for the worker's first message; throws InfraError if it fails to start.
    const json& hello(double timeout_s = 300);
    // One request and its reply; throws InfraError when the worker dies or overruns.
    // Safe to call from several threads: requests are served one at a time.
    json request(const json& body, double timeout_s, const std::vector<int>& fds = {});
    bool alive();
    pid_t pid() const { return pid_; }
    std::string log_tail(std::size_t bytes = 4000) const;

  private:
    std::string role_;
    fs::path log_path_;
    pid_t pid_ = -1;
    std::unique_ptr<sandbox::Channel> channel_;
    std::optional<json> hello_;
    std::mutex request_mutex_;
};

}  // namespace kbench::schedule
