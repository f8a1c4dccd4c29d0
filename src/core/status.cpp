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

}  // namespace kbench
