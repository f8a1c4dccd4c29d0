#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "core/status.hpp"

namespace kbench {

struct Verdict;

// Whose outcome a verdict is. Only the candidate's outcomes score; the others are masked (a
// trainer drops them rather than scoring them 0) and set the command's exit code.
enum class Blame {
    candidate,  // the candidate's code decided it, whatever the status
    reference,  // the reference program failed
    problem,    // the problem does not fit the device
    kbench,     // kbench's own failure (infra_error)
};

std::string_view to_string(Blame blame);
std::optional<Blame> parse_blame(std::string_view text);

// A verdict's decision: its status, whose it is, the rule that decided it (an integrity rule's
// id; empty where no rule did) and its one-line reason. Every place that ends an evaluation
// reports its facts through one of these constructors, and decide() is the only place a
// verdict's decision is written (tests/layering.py checks).
struct Decision {
    Status status = Status::infra_error;
    Blame blame = Blame::kbench;
    std::string rule;
    std::string reason;

    static Decision correct();
    // Outputs that missed the tolerance.
    static Decision incorrect(std::string reason);
    // An integrity rule rejected the candidate.
    static Decision rejected(std::string rule, std::string reason);
    // The candidate failed: compile_error, load_error, runtime_error, timeout or crash.
    static Decision failed(Status status, std::string reason);
    static Decision of_reference(std::string reason);
    static Decision of_problem(std::string reason);
    static Decision of_kbench(std::string reason);

    // The outcome is not the candidate's: kbench, the reference or the problem decided it.
    bool masked() const { return blame != Blame::candidate; }
};

// Writes the decision into the verdict: status, blame, rule and reason.
void decide(Verdict& verdict, Decision decision);

// The decision of a verdict stored before verdicts named their blame: an infra_error is
// kbench's, a load_error whose reason begins "the reference" the reference's, the rest the
// candidate's.
Blame blame_of_stored(Status status, std::string_view reason);

}  // namespace kbench
