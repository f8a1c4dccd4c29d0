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

}  // namespace kbench
