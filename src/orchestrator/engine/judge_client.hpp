#pragma once

#include <unistd.h>

#include <string>
#include <vector>

#include "orchestrator/workers/sandbox_process.hpp"
#include "protocol/judge_messages.hpp"

namespace kbench::orchestrator {

// What the evaluation's phases ask of a judge, typed: each call returns the judge's payload or
// its fault. A judge process is behind it in a run, a fake in the phases' tests.
class JudgeClient {
  public:
    virtual ~JudgeClient() = default;
    virtual protocol::Reply<protocol::SandboxAttached> attach(const protocol::AttachRequest& r,
                                                              int socket) = 0;
    virtual protocol::Reply<protocol::Empty> load(const protocol::LoadRequest& r) = 0;
    virtual protocol::Reply<protocol::CorrectnessChecked> correctness(
        const protocol::CorrectnessRequest& r) = 0;
    virtual protocol::Reply<protocol::CandidateTimed> timing(const protocol::TimingRequest& r) = 0;
    virtual protocol::Reply<protocol::KnockoutChecked> knockout(
        const protocol::KnockoutRequest& r) = 0;
    virtual protocol::Reply<protocol::Empty> detach() = 0;
    virtual protocol::Reply<protocol::BaselineTimed> baseline(const protocol::BaselineRequest& r,
                                                              double timeout_s) = 0;
};

// What the phases need of the sandbox besides the judge: its end, its output and its census.
class SandboxHandle {
  public:
    virtual ~SandboxHandle() = default;
    virtual ConfinedExit finish() = 0;
    virtual ConfinedExit kill() = 0;
    virtual std::string output() const = 0;
    virtual std::vector<std::string> threads() const = 0;
    virtual std::vector<std::string> processes() const = 0;
};

// A judge process: each request may take its phase's limit and half a minute more.
class JudgeProcessClient : public JudgeClient {
  public:
    explicit JudgeProcessClient(WorkerProcess& judge) : judge_(judge) {}

    protocol::Reply<protocol::SandboxAttached> attach(const protocol::AttachRequest& r,
                                                      int socket) override {
        // The judge holds the socket from here on: kbench keeps no copy of it.
        struct Closer {
            int fd;
            ~Closer() { ::close(fd); }
        } closer{socket};
        return judge_.call<protocol::SandboxAttached>(r, r.limit_s + 30, {socket});
    }
    protocol::Reply<protocol::Empty> load(const protocol::LoadRequest& r) override {
        return judge_.call<protocol::Empty>(r, r.limit_s + 30);
    }
    protocol::Reply<protocol::CorrectnessChecked> correctness(
        const protocol::CorrectnessRequest& r) override {
        // The judge's own work (arbitration at a wider precision) extends the sandbox's limit.
        return judge_.call<protocol::CorrectnessChecked>(r, 2 * r.limit_s + 60);
    }
    protocol::Reply<protocol::CandidateTimed> timing(const protocol::TimingRequest& r) override {
        return judge_.call<protocol::CandidateTimed>(r, 2 * r.limit_s + 60);
    }
    protocol::Reply<protocol::KnockoutChecked> knockout(
        const protocol::KnockoutRequest& r) override {
        return judge_.call<protocol::KnockoutChecked>(r, 2 * r.limit_s + 60);
    }
    protocol::Reply<protocol::Empty> detach() override {
        return judge_.call<protocol::Empty>(protocol::DetachRequest{}, 60);
    }
    protocol::Reply<protocol::BaselineTimed> baseline(const protocol::BaselineRequest& r,
                                                      double timeout_s) override {
        return judge_.call<protocol::BaselineTimed>(r, timeout_s);
    }

  private:
    WorkerProcess& judge_;
};

// A sandbox process.
class SandboxProcessHandle : public SandboxHandle {
  public:
    explicit SandboxProcessHandle(SandboxProcess& sandbox) : sandbox_(sandbox) {}
    ConfinedExit finish() override { return sandbox_.finish(); }
    ConfinedExit kill() override { return sandbox_.kill(); }
    std::string output() const override { return sandbox_.output(); }
    std::vector<std::string> threads() const override { return sandbox_.threads(); }
    std::vector<std::string> processes() const override { return sandbox_.processes(); }

  private:
    SandboxProcess& sandbox_;
};

}  // namespace kbench::orchestrator
