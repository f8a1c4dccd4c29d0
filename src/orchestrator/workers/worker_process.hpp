#pragma once

#include <sys/types.h>

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "core/error.hpp"
#include "core/files.hpp"
#include "process/channel.hpp"
#include "process/process.hpp"
#include "protocol/message.hpp"

namespace kbench::orchestrator {

// Where and how worker processes run.
struct WorkerEnvironment {
    std::string python;           // interpreter with torch
    fs::path worker_package_dir;  // holds kbench_worker/
    bool verify_package = true;   // check it against the built package before each start
    DeviceKind device_kind = DeviceKind::cpu;
    std::string visible_gpu;     // CUDA_VISIBLE_DEVICES for workers of a GPU
    std::vector<int> cpu_cores;  // where the workers may run (empty: anywhere); their
                                 // PyTorch uses as many threads
    fs::path log_dir;            // worker logs
    int nice = 0;                // added to the workers' niceness
    int device_share = 1;        // judges sharing the device (kbench baseline --jobs):
                                 // each caches reference calls in its share of memory
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
    // Safe to call from several threads: requests are served one at a time. Descriptors that
    // come with the reply go to received (the caller's), or are closed.
    json request(const json& body, double timeout_s, const std::vector<int>& fds = {},
                 std::vector<int>* received = nullptr);

    // A typed request and its typed reply (payload or fault); a reply that breaks the protocol
    // is the harness's failure (InfraError), since workers are kbench's own.
    template <typename Reply, typename Request>
    protocol::Reply<Reply> call(const Request& r, double timeout_s,
                                const std::vector<int>& fds = {},
                                std::vector<int>* received = nullptr) {
        json body = request(protocol::request_json(r), timeout_s, fds, received);
        try {
            return protocol::read_reply<Reply>(body, role_ + " reply");
        } catch (const ProtocolError& e) {
            throw InfraError("the " + role_ + " broke kbench's protocol: " + e.what());
        }
    }
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

}  // namespace kbench::orchestrator
