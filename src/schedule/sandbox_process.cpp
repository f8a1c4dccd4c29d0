#include "schedule/sandbox_process.hpp"

#include <signal.h>
#include <unistd.h>

#include "core/error.hpp"

namespace kbench::schedule {
namespace {

auto deadline_after(double seconds) {
    return sandbox::Clock::now() + std::chrono::milliseconds(long(seconds * 1000));
}

}  // namespace

SandboxProcess::SandboxProcess(WorkerProcess& zygote, const Options& options) : zygote_(zygote) {
    auto [ours, theirs] = sandbox::make_socket_pair();
    auto [output_read, output_write] = sandbox::make_pipe();
    json request = {{"op", "fork"},
                    {"role", options.role},
                    {"device", options.device_kind},
                    {"cwd", options.cwd.string()},
                    {"env", options.env}};
    json reply;
    try {
        reply = zygote_.request(request, 60, {theirs, output_write});
    } catch (...) {
        for (int fd : {ours, theirs, output_read, output_write}) ::close(fd);
        throw;
    }
    ::close(theirs);
    ::close(output_write);
    channel_ = std::make_unique<sandbox::Channel>(ours, output_read);
    if (!reply.value("ok", false))
        throw InfraError("the zygote could not fork a " + options.role + ": " +
                         reply.value("error", std::string("?")));
    pid_ = reply.at("pid").get<pid_t>();
}

SandboxProcess::~SandboxProcess() {
    try {
        if (!status_) kill();
    } catch (...) {
    }
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

sandbox::ExitStatus SandboxProcess::reap() {
    if (status_) return *status_;
    json reply = zygote_.request({{"op", "reap"}, {"pid", pid_}}, 60);
    sandbox::ExitStatus status;
    status.exited = reply.value("exited", true);
    status.code = reply.value("code", 0);
    status.signal = reply.value("signal", 0);
    status_ = status;
    channel_->drain_output(std::chrono::milliseconds(200));
    return status;
}

sandbox::ExitStatus SandboxProcess::finish() {
    if (status_) return *status_;
    try {
        channel_->send({{"op", "exit"}});
    } catch (...) {
    }
    // The process answers exit by ending; its socket closing says so.
    auto reply = channel_->receive(deadline_after(5));
    if (reply.event == sandbox::Channel::Event::timed_out) sandbox::kill_process_tree(pid_);
    // Children the candidate left behind go with the group.
    ::kill(-pid_, SIGKILL);
    return reap();
}

sandbox::ExitStatus SandboxProcess::kill() {
    if (status_) return *status_;
    sandbox::kill_process_tree(pid_);
    return reap();
}

}  // namespace kbench::schedule
