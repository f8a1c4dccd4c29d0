#include "core/status.hpp"

#include <array>
#include <utility>

namespace kbench {
namespace {

constexpr std::array<std::pair<Status, std::string_view>, 9> kNames{{
    {Status::correct, "correct"},
    {Status::incorrect, "incorrect"},
    {Status::rejected, "rejected"},
    {Status::compile_error, "compile_error"},
    {Status::load_error, "load_error"},
    {Status::runtime_error, "runtime_error"},
    {Status::timeout, "timeout"},
    {Status::crash, "crash"},
    {Status::infra_error, "infra_error"},
}};

}  // namespace

std::string_view to_string(Status status) {
    for (const auto& [value, name] : kNames)
        if (value == status) return name;
    return "unknown";
}

std::optional<Status> parse_status(std::string_view text) {
    for (const auto& [value, name] : kNames)
        if (name == text) return value;
    return std::nullopt;
}

std::string_view to_string(Severity severity) {
    return severity == Severity::reject ? "reject" : "warn";
}

std::optional<Severity> parse_severity(std::string_view text) {
    if (text == "warn") return Severity::warn;
    if (text == "reject") return Severity::reject;
    return std::nullopt;
}

std::string_view to_string(BuildOutcome outcome) {
    switch (outcome) {
        case BuildOutcome::ok:
            return "ok";
        case BuildOutcome::compile_error:
            return "compile_error";
        case BuildOutcome::import_error:
            return "import_error";
        case BuildOutcome::timeout:
            return "timeout";
    }
    return "import_error";
}

std::optional<BuildOutcome> parse_build_outcome(std::string_view text) {
    for (BuildOutcome o : {BuildOutcome::ok, BuildOutcome::compile_error,
                           BuildOutcome::import_error, BuildOutcome::timeout})
        if (to_string(o) == text) return o;
    return std::nullopt;
}

}  // namespace kbench
