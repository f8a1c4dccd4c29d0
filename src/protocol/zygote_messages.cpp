#include "protocol/zygote_messages.hpp"

#include "core/error.hpp"

namespace kbench::protocol {
namespace {

std::map<std::string, std::string> text_map(const json& j, const std::string& what) {
    std::map<std::string, std::string> out;
    for (const auto& [key, value] : j.items()) {
        if (!value.is_string()) throw ProtocolError(what + "." + key + " is not text");
        out[key] = value.get<std::string>();
    }
    return out;
}

}  // namespace

json ZygoteHello::to_json() const {
    return json{
        {"role", "zygote"}, {"pid", pid}, {"torch", torch}, {"cuda", cuda}, {"python", python}};
}

ZygoteHello ZygoteHello::from_json(const json& j) {
    Fields f(j, "zygote hello");
    if (f.text("role") != "zygote") throw ProtocolError("the zygote's hello names another role");
    return {f.integer("pid"), f.text("torch"), f.text("cuda"), f.text("python")};
}

json ForkRequest::to_json() const {
    return json{{"role", role},
                {"device", std::string(to_string(device))},
                {"cwd", cwd},
                {"env", env},
                {"lockdown", lockdown.to_json()}};
}

ForkRequest ForkRequest::from_json(const json& j) {
    Fields f(j, "fork request");
    ForkRequest r{f.text("role"), device_field(f), f.text("cwd"), text_map(f.object("env"), "env"),
                  sandbox::LockdownSpec::from_json(f.object("lockdown"))};
    if (r.role != "sandbox" && r.role != "builder")
        throw ProtocolError("a fork request for a '" + r.role + "'");
    return r;
}

json Forked::to_json() const {
    return json{{"pid", pid}, {"body_pid", body_pid}, {"layers", layers.to_json()}};
}

Forked Forked::from_json(const json& j) {
    Fields f(j, "fork reply");
    return {f.integer("pid"), f.integer("body_pid"),
            sandbox::LayerReport::from_json(f.object("layers"))};
}

json ReapRequest::to_json() const {
    return json{{"pid", pid}};
}

ReapRequest ReapRequest::from_json(const json& j) {
    Fields f(j, "reap request");
    return {f.integer("pid")};
}

json Reaped::to_json() const {
    return json{{"known", known},   {"exited", exited},       {"code", code},
                {"signal", signal}, {"leftovers", leftovers}, {"signals", signals}};
}

Reaped Reaped::from_json(const json& j) {
    Fields f(j, "reap reply");
    return {f.flag("known"),   f.flag("exited"),     f.small("code"),
            f.small("signal"), f.texts("leftovers"), f.texts("signals")};
}

json BuilderHello::to_json() const {
    return json{{"role", "builder"}, {"pid", pid}};
}

BuilderHello BuilderHello::from_json(const json& j) {
    Fields f(j, "builder hello");
    if (f.text("role") != "builder") throw ProtocolError("the builder's hello names another role");
    return {f.integer("pid")};
}

json BuildRequest::to_json() const {
    return json{{"candidate_file", candidate_file}, {"preamble", preamble}};
}

BuildRequest BuildRequest::from_json(const json& j) {
    Fields f(j, "build request");
    return {f.text("candidate_file"), f.text("preamble")};
}

json Built::to_json() const {
    return json{{"outcome", std::string(to_string(outcome))}, {"log", log}};
}

Built Built::from_json(const json& j) {
    Fields f(j, "build reply");
    std::string outcome = f.text("outcome");
    Built b;
    std::optional<BuildOutcome> known = parse_build_outcome(outcome);
    // A builder reports how its build ended; only kbench's deadline makes a timeout.
    if (!known || *known == BuildOutcome::timeout)
        throw ProtocolError("a build outcome of '" + outcome + "'");
    b.outcome = *known;
    b.log = f.text("log");
    return b;
}

}  // namespace kbench::protocol
