#pragma once

// Between the orchestrator and a zygote (trusted: it forks the processes that run candidate
// code and reaps them), and between the orchestrator and a builder (one such process).

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/status.hpp"
#include "protocol/lockdown_spec.hpp"
#include "protocol/message.hpp"

namespace kbench::protocol {

struct ZygoteHello {
    std::int64_t pid = 0;
    std::string torch, cuda, python;

    json to_json() const;
    static ZygoteHello from_json(const json& j);
};

// Fork a confined process; its control socket and output pipe ride on the request.
struct ForkRequest {
    static constexpr Op kOp = Op::fork;
    std::string role;  // "sandbox" or "builder"
    DeviceKind device = DeviceKind::cpu;
    std::string cwd;  // its scratch folder
    std::map<std::string, std::string> env;
    sandbox::LockdownSpec lockdown;

    json to_json() const;
    static ForkRequest from_json(const json& j);
};

struct Forked {
    std::int64_t pid = 0;       // to reap and to kill (its process group ends it all)
    std::int64_t body_pid = 0;  // the process that runs the candidate's code
    sandbox::LayerReport layers;

    json to_json() const;
    static Forked from_json(const json& j);
};

struct ReapRequest {
    static constexpr Op kOp = Op::reap;
    std::int64_t pid = 0;

    json to_json() const;
    static ReapRequest from_json(const json& j);
};

struct Reaped {
    bool known = false;  // whether the body's own end is known
    bool exited = false;
    int code = 0;
    int signal = 0;
    std::vector<std::string> leftovers;  // processes it left behind, killed
    std::vector<std::string> signals;    // signals its processes sent to the zygote

    json to_json() const;
    static Reaped from_json(const json& j);
};

struct BuilderHello {
    std::int64_t pid = 0;

    json to_json() const;
    static BuilderHello from_json(const json& j);
};

struct BuildRequest {
    static constexpr Op kOp = Op::build;
    std::string candidate_file;
    std::string preamble;  // run in the candidate's module first (CandidateSpec::preamble)

    json to_json() const;
    static BuildRequest from_json(const json& j);
};

struct Built {
    BuildOutcome outcome = BuildOutcome::ok;
    std::string log;

    json to_json() const;
    static Built from_json(const json& j);
};

}  // namespace kbench::protocol
