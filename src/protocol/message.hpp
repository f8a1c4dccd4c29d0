#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/config.hpp"
#include "core/fields.hpp"
#include "protocol/fault.hpp"

namespace kbench::protocol {

// Every request names its operation; a worker refuses one it does not serve.
enum class Op {
    exit,
    prepare,
    attach,
    load,
    correctness,
    timing,
    detach,
    baseline,
    health,
    call,
    fork,
    reap,
    build,
    audit,
    kernels,
    knockout,
};

std::string_view to_string(Op op);
Op parse_op(std::string_view text);  // throws ProtocolError

// The operation of a request message; throws ProtocolError when it has none.
Op op_of(const json& request);

// A message's TF32 policy ("off", "on" or "default"); throws ProtocolError for another.
Tf32 tf32_field(const Fields& f, const char* name = "tf32");
// A message's device kind ("cpu" or "cuda"); throws ProtocolError for another.
DeviceKind device_field(const Fields& f, const char* name = "device");

// A request as sent: its fields and {"op": name}.
template <typename Request>
json request_json(const Request& r) {
    json j = r.to_json();
    j["op"] = std::string(to_string(Request::kOp));
    return j;
}

// A reply carries its payload or a fault, never both: {"ok": true, ...} or
// {"ok": false, "fault": {...}}.
template <typename Payload>
json reply_json(const Payload& p) {
    json j = p.to_json();
    j["ok"] = true;
    return j;
}
json fault_json(const Fault& fault);

template <typename Payload>
struct Reply {
    std::optional<Payload> value;
    std::optional<Fault> fault;
    bool ok() const { return value.has_value(); }
};

// Reads a reply strictly: a malformed one throws ProtocolError, so it can never pass.
template <typename Payload>
Reply<Payload> read_reply(const json& j, const std::string& what) {
    Fields f(j, what);
    Reply<Payload> r;
    if (f.flag("ok"))
        r.value = Payload::from_json(j);
    else
        r.fault = Fault::from_json(f.object("fault"));
    return r;
}

// Messages with nothing in them but their operation or their success.
struct Empty {
    json to_json() const { return json::object(); }
    static Empty from_json(const json&) { return {}; }
};

template <Op O>
struct Bare {
    static constexpr Op kOp = O;
    json to_json() const { return json::object(); }
    static Bare from_json(const json&) { return {}; }
};

// Helpers for lists of messages.
template <typename T>
json list_json(const std::vector<T>& items) {
    json out = json::array();
    for (const auto& item : items) out.push_back(item.to_json());
    return out;
}

template <typename T>
std::vector<T> list_from(const Fields& f, const char* name) {
    std::vector<T> out;
    for (const json& item : f.array(name)) out.push_back(T::from_json(item));
    return out;
}

}  // namespace kbench::protocol
