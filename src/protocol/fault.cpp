#include "protocol/fault.hpp"

#include <array>
#include <utility>

#include "core/error.hpp"

namespace kbench::protocol {
namespace {

constexpr std::array<std::pair<FaultKind, std::string_view>, 10> kKinds{{
    {FaultKind::candidate_load, "candidate_load"},
    {FaultKind::candidate_build, "candidate_build"},
    {FaultKind::candidate_raised, "candidate_raised"},
    {FaultKind::candidate_overran, "candidate_overran"},
    {FaultKind::sandbox_ended, "sandbox_ended"},
    {FaultKind::protocol_violation, "protocol_violation"},
    {FaultKind::integrity, "integrity"},
    {FaultKind::reference, "reference"},
    {FaultKind::harness, "harness"},
    {FaultKind::device, "device"},
}};

}  // namespace

std::string_view to_string(FaultKind kind) {
    for (const auto& [value, name] : kKinds)
        if (value == kind) return name;
    return "harness";
}

FaultKind parse_fault_kind(std::string_view text) {
    for (const auto& [value, name] : kKinds)
        if (name == text) return value;
    throw ProtocolError("unknown fault kind '" + std::string(text) + "'");
}

Decision decision_of(const Fault& fault, std::string reason) {
    switch (fault.kind) {
        case FaultKind::candidate_load:
            return Decision::failed(Status::load_error, std::move(reason));
        case FaultKind::candidate_build:
            return Decision::failed(Status::compile_error, std::move(reason));
        case FaultKind::candidate_raised:
            return Decision::failed(Status::runtime_error, std::move(reason));
        case FaultKind::candidate_overran:
            return Decision::failed(Status::timeout, std::move(reason));
        case FaultKind::sandbox_ended:
            return Decision::failed(Status::crash, std::move(reason));
        case FaultKind::protocol_violation:
        case FaultKind::integrity:
            return Decision::rejected(fault.rule.empty() ? "protocol_violation" : fault.rule,
                                      std::move(reason));
        case FaultKind::reference:
            return Decision::of_reference(std::move(reason));
        case FaultKind::harness:
        case FaultKind::device:
            break;
    }
    return Decision::of_kbench(std::move(reason));
}

bool is_candidates(FaultKind kind) {
    return kind != FaultKind::reference && kind != FaultKind::harness && kind != FaultKind::device;
}

json Fault::to_json() const {
    return json{{"kind", std::string(to_string(kind))},
                {"message", message},
                {"rule", rule},
                {"where", where}};
}

Fault Fault::from_json(const json& j) {
    Fields f(j, "fault");
    return {parse_fault_kind(f.text("kind")), f.text("message"), f.text("rule"), f.text("where")};
}

}  // namespace kbench::protocol
