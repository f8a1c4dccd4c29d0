#pragma once

#include <sys/types.h>

#include <memory>
#include <string>

#include "sandbox/channel.hpp"
#include "sandbox/process.hpp"
#include "schedule/worker_process.hpp"

namespace kbench::schedule {

// One untrusted process forked by the zygote (a sandbox or a builder), in its own process group,
// its output captured up to a bound, every wait bounded by a phase deadline.
class SandboxProcess {
  public:
    struct Options {
        std::string role = "sandbox";  // or "builder"
        std::string device_kind = "cpu";
        fs::path cwd;               // private scratch folder
        json env = json::object();  // extra environment
    };

    SandboxProcess(WorkerProcess& zygote, const Options& options);
    ~SandboxProcess();
    SandboxProcess(const SandboxProcess&) = delete;
    SandboxProcess& operator=(const SandboxProcess&) = delete;

    // Sends a request and waits for the reply up to timeout_s.
    sandbox::Channel::Reply call(const json& body, double timeout_s);
    // Waits for the first message (the process's hello).
    sandbox::Channel::Reply hello(double timeout_s);

    // Asks the process to exit, waits briefly, then kills it; returns how it ended.
    sandbox::ExitStatus finish();
    // Kills the process group now and returns how it ended.
    sandbox::ExitStatus kill();

    pid_t pid() const { return pid_; }
    std::string output() const { return channel_->output().text(); }

  private:
    sandbox::ExitStatus reap();

    WorkerProcess& zygote_;
    pid_t pid_ = -1;
    std::unique_ptr<sandbox::Channel> channel_;
    std::optional<sandbox::ExitStatus> status_;
};

}  // namespace kbench::schedule
