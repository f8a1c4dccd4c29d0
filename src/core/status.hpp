#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace kbench {

// The outcome of one evaluation; exactly one per verdict.
enum class Status {
    correct,
    incorrect,
    rejected,
    compile_error,
    load_error,
    runtime_error,
    timeout,
    crash,
    infra_error,
};

std::string_view to_string(Status status);
std::optional<Status> parse_status(std::string_view text);

// What an integrity finding does to the candidate: warn (recorded) or reject.
enum class Severity { warn, reject };

std::string_view to_string(Severity severity);
std::optional<Severity> parse_severity(std::string_view text);

// How a candidate's build ended: a builder reports ok, compile_error or import_error (its module
// did not import); kbench's own deadline makes timeout. Not a verdict: the evaluation decides.
enum class BuildOutcome { ok, compile_error, import_error, timeout };

std::string_view to_string(BuildOutcome outcome);
std::optional<BuildOutcome> parse_build_outcome(std::string_view text);

}  // namespace kbench
