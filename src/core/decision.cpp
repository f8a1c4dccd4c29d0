#include "core/decision.hpp"

#include <array>
#include <stdexcept>
#include <utility>

#include "core/verdict.hpp"

namespace kbench {
namespace {

constexpr std::array<std::pair<Blame, std::string_view>, 4> kBlames{{
    {Blame::candidate, "candidate"},
    {Blame::reference, "reference"},
    {Blame::problem, "problem"},
    {Blame::kbench, "kbench"},
}};

}  // namespace

std::string_view to_string(Blame blame) {
    for (const auto& [value, name] : kBlames)
        if (value == blame) return name;
    return "unknown";
}

std::optional<Blame> parse_blame(std::string_view text) {
    for (const auto& [value, name] : kBlames)
        if (name == text) return value;
    return std::nullopt;
}

Decision Decision::correct() {
    return {Status::correct, Blame::candidate, "", ""};
}

Decision Decision::incorrect(std::string reason) {
    return {Status::incorrect, Blame::candidate, "", std::move(reason)};
}

Decision Decision::rejected(std::string rule, std::string reason) {
    return {Status::rejected, Blame::candidate, std::move(rule), std::move(reason)};
}

Decision Decision::failed(Status status, std::string reason) {
    if (status == Status::correct || status == Status::incorrect || status == Status::rejected ||
        status == Status::infra_error)
        throw std::logic_error("Decision::failed: " + std::string(to_string(status)) +
                               " is not a failure of the candidate's");
    return {status, Blame::candidate, "", std::move(reason)};
}

Decision Decision::of_reference(std::string reason) {
    return {Status::load_error, Blame::reference, "", std::move(reason)};
}

Decision Decision::of_problem(std::string reason) {
    return {Status::load_error, Blame::problem, "", std::move(reason)};
}

Decision Decision::of_kbench(std::string reason) {
    return {Status::infra_error, Blame::kbench, "", std::move(reason)};
}

void decide(Verdict& verdict, Decision decision) {
    verdict.status = decision.status;
    verdict.blame = decision.blame;
    verdict.rule = std::move(decision.rule);
    verdict.reason = std::move(decision.reason);
}

Blame blame_of_stored(Status status, std::string_view reason) {
    if (status == Status::infra_error) return Blame::kbench;
    if (status == Status::load_error && reason.rfind("the reference", 0) == 0)
        return Blame::reference;
    if (status == Status::load_error && reason.rfind("the problem does not fit", 0) == 0)
        return Blame::problem;
    return Blame::candidate;
}

}  // namespace kbench
