#include "orchestrator/workers/sandbox_process.hpp"

#include <signal.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <fstream>

#include "core/error.hpp"
#include "core/files.hpp"
#include "process/process_tree.hpp"
#include "protocol/zygote_messages.hpp"

namespace kbench::orchestrator {
namespace {

auto deadline_after(double seconds) {
    return sandbox::Clock::now() + std::chrono::milliseconds(long(seconds * 1000));
}

std::vector<std::string> names(const std::vector<std::pair<pid_t, std::string>>& list) {
    std::vector<std::string> out;
    for (const auto& [pid, name] : list) out.push_back(name + " (" + std::to_string(pid) + ")");
    return out;
}

}  // namespace

SandboxProcess::SandboxProcess(WorkerProcess& zygote, const Options& options) : zygote_(zygote) {
    auto [ours, theirs] = sandbox::make_socket_pair();
    auto [output_read, output_write] = sandbox::make_pipe();
    sandbox::LockdownSpec lockdown = options.lockdown;
    protocol::ForkRequest request{options.role, options.device_kind, options.cwd.string(),
                                  options.env, lockdown};
    protocol::Reply<protocol::Forked> reply;
    std::vector<int> folders;
    try {
        reply = zygote_.call<protocol::Forked>(request, 60, {theirs, output_write}, &folders);
    } catch (...) {
        for (int fd : {ours, theirs, output_read, output_write}) ::close(fd);
        throw;
    }
    ::close(theirs);
    ::close(output_write);
    channel_ = std::make_unique<sandbox::Channel>(ours, -1);
    drain_ = std::make_unique<sandbox::OutputDrain>(output_read);
    if (!reply.ok())
        throw InfraError("the zygote could not start a " + options.role + ": " +
                         reply.fault->message);
    pid_ = pid_t(reply.value->pid);
    body_pid_ = pid_t(reply.value->body_pid);
    layers_ = reply.value->layers;
    cwd_ = options.cwd;
    // Its folder under the quota, as it sees it: the one writable folder (its cwd).
    if (folders.size() == 1 && lockdown.writable.size() == 1 && lockdown.writable[0] == cwd_)
        folder_fd_ = folders[0];
    else
        for (int fd : folders) ::close(fd);
}

fs::path SandboxProcess::folder() const {
    return folder_fd_ >= 0 ? fs::path("/proc/self/fd/" + std::to_string(folder_fd_)) : cwd_;
}

std::string SandboxProcess::full_folder() const {
    struct statfs st {};
    if (folder_fd_ < 0 || ::fstatfs(folder_fd_, &st) != 0) return "";
    auto bytes = [&](std::uint64_t blocks) { return blocks * std::uint64_t(st.f_bsize); };
    if (bytes(st.f_bavail) >= (1u << 20) && st.f_ffree > 0) return "";
    return "its folder was full: the disk quota of " + std::to_string(bytes(st.f_blocks) >> 20) +
           " MiB and " + std::to_string(sandbox::kDiskFiles) +
           " files (KBENCH_SANDBOX_DISK_GIB sets the size)";
}

SandboxProcess::~SandboxProcess() {
    try {
        if (!exit_) kill();
    } catch (...) {
    }
    if (folder_fd_ >= 0) ::close(folder_fd_);
}

int SandboxProcess::take_control() {
    return channel_->release_socket();
}

sandbox::Channel::Reply SandboxProcess::hello(double timeout_s) {
    return channel_->receive(deadline_after(timeout_s));
}

sandbox::Channel::Reply SandboxProcess::call(const json& body, double timeout_s) {
    try {
        channel_->send(body);
    } catch (const std::exception&) {
        return {sandbox::Channel::Event::closed, {}};
    }
    return channel_->receive(deadline_after(timeout_s));
}

ConfinedExit SandboxProcess::reap() {
    if (exit_) return *exit_;
    auto reply = zygote_.call<protocol::Reaped>(protocol::ReapRequest{pid_}, 60);
    if (!reply.ok())
        throw InfraError("the zygote could not reap a sandbox: " + reply.fault->message);
    ConfinedExit e;
    e.known = reply.value->known;
    e.status.exited = reply.value->exited;
    e.status.code = reply.value->code;
    e.status.signal = reply.value->signal;
    e.leftovers = reply.value->leftovers;
    e.signals = reply.value->signals;
    exit_ = e;
    drain_->wait_for_end(std::chrono::milliseconds(500));
    return e;
}

bool SandboxProcess::wait_for_exit(std::chrono::milliseconds at_most) const {
    auto deadline = std::chrono::steady_clock::now() + at_most;
    std::string stat_path = "/proc/" + std::to_string(pid_) + "/stat";
    for (;;) {
        std::string fields = proc_stat_fields(stat_path);
        if (fields.empty()) return true;  // reaped
        char state = fields[0];
        if (state == 'Z' || state == 'X') return true;
        if (std::chrono::steady_clock::now() >= deadline) return false;
        ::usleep(5000);
    }
}

bool SandboxProcess::running() const {
    return !exit_ && !wait_for_exit(std::chrono::milliseconds(0));
}

ConfinedExit SandboxProcess::finish() {
    if (exit_) return *exit_;
    if (channel_->has_socket()) {
        try {
            channel_->send({{"op", "exit"}});
        } catch (...) {
        }
        // The process answers exit by ending; its socket closing says so.
        channel_->receive(deadline_after(5));
    }
    // Told to exit (by kbench, or by the judge that holds its socket), or already dead: it gets
    // a moment to end and report how before its process group goes.
    wait_for_exit(std::chrono::milliseconds(2000));
    sandbox::kill_process_tree(pid_);
    return reap();
}

ConfinedExit SandboxProcess::kill() {
    if (exit_) return *exit_;
    sandbox::kill_process_tree(pid_);
    return reap();
}

std::vector<std::string> SandboxProcess::threads() const {
    return names(sandbox::threads_of(body_pid_));
}

std::vector<std::string> SandboxProcess::processes() const {
    std::vector<std::pair<pid_t, std::string>> found;
    for (const auto& [pid, name] : sandbox::descendants_of(body_pid_))
        found.emplace_back(pid, name);
    return names(found);
}

}  // namespace kbench::orchestrator
