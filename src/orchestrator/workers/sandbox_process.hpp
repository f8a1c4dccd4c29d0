#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "confinement/lockdown.hpp"
#include "orchestrator/workers/worker_process.hpp"
#include "process/channel.hpp"
#include "process/output_drain.hpp"
#include "process/process.hpp"

namespace kbench::orchestrator {

// How a confined process ended, as its zygote saw it.
struct ConfinedExit {
    sandbox::ExitStatus status;
    bool known = false;                  // whether the candidate's own process's end is known
    std::vector<std::string> leftovers;  // processes it left behind, killed
    std::vector<std::string> signals;    // signals its processes sent to kbench's zygote
};

// One process that runs candidate code, forked by a zygote under a lockdown: a sandbox, whose
// control socket goes to the judge, or a builder, which kbench talks to itself. Its output is
// captured up to a bound; it ends by its process group (and with it, in a PID namespace,
// everything it started) and is reaped through the zygote.
class SandboxProcess {
  public:
    struct Options {
        std::string role = "sandbox";  // or "builder"
        DeviceKind device_kind = DeviceKind::cpu;
        fs::path cwd;  // its private scratch folder
        std::map<std::string, std::string> env;
        sandbox::LockdownSpec lockdown;
    };

    SandboxProcess(WorkerProcess& zygote, const Options& options);
    ~SandboxProcess();
    SandboxProcess(const SandboxProcess&) = delete;
    SandboxProcess& operator=(const SandboxProcess&) = delete;

    // The control socket, for whoever talks to the process (the judge); the caller owns it.
    int take_control();
    // For builders: kbench talks to them itself.
    sandbox::Channel& channel() { return *channel_; }
    sandbox::Channel::Reply call(const json& body, double timeout_s);
    sandbox::Channel::Reply hello(double timeout_s);

    // Asks the process to exit (if it still has its socket here), waits briefly, then kills it;
    // returns how it ended. Everything it started is gone when this returns.
    ConfinedExit finish();
    // Kills it now.
    ConfinedExit kill();

    // Whether its process is still there (not ended, not a zombie).
    bool running() const;

    // Its own folder as kbench reaches it: under disk_quota the tmpfs it sees at its cwd (through
    // a descriptor of kbench's, valid until this object ends, after the process too), else its
    // cwd. kbench places its files there once it has started, and reads what it made there.
    fs::path folder() const;
    // Says so when its folder is full under the disk quota (within 1 MiB, or no file left);
    // empty otherwise.
    std::string full_folder() const;

    pid_t pid() const { return pid_; }
    pid_t body_pid() const { return body_pid_; }
    const sandbox::LayerReport& layers() const { return layers_; }
    std::string output() const { return drain_->text(); }

    // Threads of the candidate's process and the processes it started, by name.
    std::vector<std::string> threads() const;
    std::vector<std::string> processes() const;

  private:
    ConfinedExit reap();
    // Waits for the process to end on its own (its relay ends only once the namespace's init
    // has reported how the candidate's process ended), at most the given time.
    bool wait_for_exit(std::chrono::milliseconds at_most) const;

    WorkerProcess& zygote_;
    pid_t pid_ = -1;
    pid_t body_pid_ = -1;
    sandbox::LayerReport layers_;
    fs::path cwd_;
    int folder_fd_ = -1;
    std::unique_ptr<sandbox::Channel> channel_;
    std::unique_ptr<sandbox::OutputDrain> drain_;
    std::optional<ConfinedExit> exit_;
};

}  // namespace kbench::orchestrator
