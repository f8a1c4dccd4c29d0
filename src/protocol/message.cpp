#include "protocol/message.hpp"

#include <array>
#include <utility>

#include "core/error.hpp"

namespace kbench::protocol {
namespace {

constexpr std::array<std::pair<Op, std::string_view>, 16> kOps{{
    {Op::exit, "exit"},
    {Op::prepare, "prepare"},
    {Op::attach, "attach"},
    {Op::load, "load"},
    {Op::correctness, "correctness"},
    {Op::timing, "timing"},
    {Op::detach, "detach"},
    {Op::baseline, "baseline"},
    {Op::health, "health"},
    {Op::call, "call"},
    {Op::fork, "fork"},
    {Op::reap, "reap"},
    {Op::build, "build"},
    {Op::audit, "audit"},
    {Op::kernels, "kernels"},
    {Op::knockout, "knockout"},
}};

}  // namespace

std::string_view to_string(Op op) {
    for (const auto& [value, name] : kOps)
        if (value == op) return name;
    return "exit";
}

Op parse_op(std::string_view text) {
    for (const auto& [value, name] : kOps)
        if (name == text) return value;
    throw ProtocolError("unknown operation '" + std::string(text) + "'");
}

Op op_of(const json& request) {
    Fields f(request, "request");
    return parse_op(f.text("op"));
}

json fault_json(const Fault& fault) {
    return json{{"ok", false}, {"fault", fault.to_json()}};
}

Tf32 tf32_field(const Fields& f, const char* name) {
    std::string text = f.text(name);
    std::optional<Tf32> tf32 = tf32_named(text);
    if (!tf32) throw ProtocolError("a TF32 policy '" + text + "' (off, on or default)");
    return *tf32;
}

DeviceKind device_field(const Fields& f, const char* name) {
    std::string text = f.text(name);
    if (text != "cpu" && text != "cuda")
        throw ProtocolError("a device kind '" + text + "' (cpu or cuda)");
    return device_kind_of(text);
}

}  // namespace kbench::protocol
