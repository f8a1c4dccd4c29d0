#pragma once

#include <string>
#include <string_view>

#include "core/decision.hpp"
#include "core/fields.hpp"

namespace kbench::protocol {

// Why a request did not produce its reply. The kinds say whose fault it is; decision_of maps each
// to a verdict's decision, and it is the only place that does.
enum class FaultKind {
    candidate_load,      // no ModelNew, an exception at import or in __init__
    candidate_build,     // its extension did not compile
    candidate_raised,    // forward raised, or a device error in its code
    candidate_overran,   // a phase deadline passed
    sandbox_ended,       // the sandbox process died or exited
    protocol_violation,  // a reply that is not the protocol's: malformed, early, forged
    integrity,           // an integrity rule (named in `rule`)
    reference,           // the reference program failed
    harness,             // kbench's own failure
    device,              // the device failed in a trusted process
};

std::string_view to_string(FaultKind kind);
FaultKind parse_fault_kind(std::string_view text);  // throws ProtocolError

struct Fault;

// The one mapping from a fault to a verdict's decision: its status and blame, an integrity
// fault's rule (protocol_violation where it names none), with the reason given.
Decision decision_of(const Fault& fault, std::string reason);

// Whether the candidate is to blame (else the harness or the reference is).
bool is_candidates(FaultKind kind);

struct Fault {
    FaultKind kind = FaultKind::harness;
    std::string message;
    std::string rule;   // for integrity faults: the rule's id
    std::string where;  // within the phase: "trial 2", "timed call 17"; may be empty

    json to_json() const;
    static Fault from_json(const json& j);
};

// Thrown inside a worker to turn into a fault reply.
class FaultError : public std::runtime_error {
  public:
    FaultError(FaultKind kind, const std::string& message, std::string rule = {},
               std::string where = {})
        : std::runtime_error(message),
          kind_(kind),
          rule_(std::move(rule)),
          where_(std::move(where)) {}
    FaultKind kind() const { return kind_; }
    const std::string& rule() const { return rule_; }
    Fault fault() const { return {kind_, what(), rule_, where_}; }

  private:
    FaultKind kind_;
    std::string rule_;
    std::string where_;
};

}  // namespace kbench::protocol
