#include "protocol/lockdown_spec.hpp"

#include <algorithm>

#include "core/error.hpp"

namespace kbench::sandbox {

bool LockdownSpec::allows(const std::string& layer) const {
    return std::find(disabled.begin(), disabled.end(), layer) == disabled.end();
}

json LockdownSpec::to_json() const {
    return json{{"writable", writable},
                {"private_root", private_root},
                {"visible", visible},
                {"uid", uid},
                {"gid", gid},
                {"memory_bytes", memory_bytes},
                {"disk_bytes", disk_bytes},
                {"cgroup", cgroup},
                {"cgroup_missing", cgroup_missing},
                {"pids_cgroup", pids_cgroup},
                {"pids_cgroup_missing", pids_cgroup_missing},
                {"cpu_cgroup", cpu_cgroup},
                {"cpu_cgroup_missing", cpu_cgroup_missing},
                {"disabled", disabled},
                {"disabled_reason", disabled_reason},
                {"identity_missing", identity_missing},
                {"ipc_namespace_off", ipc_namespace_off},
                {"proc_writes", proc_writes}};
}

LockdownSpec LockdownSpec::from_json(const json& j) {
    Fields f(j, "lockdown");
    LockdownSpec s;
    s.writable = f.texts("writable");
    s.private_root = f.text("private_root");
    s.visible = f.texts("visible");
    s.uid = f.integer("uid");
    s.gid = f.integer("gid");
    s.memory_bytes = f.count("memory_bytes");
    s.disk_bytes = f.count("disk_bytes");
    s.cgroup = f.text("cgroup");
    s.cgroup_missing = f.text("cgroup_missing");
    s.pids_cgroup = f.text("pids_cgroup");
    s.pids_cgroup_missing = f.text("pids_cgroup_missing");
    s.cpu_cgroup = f.text("cpu_cgroup");
    s.cpu_cgroup_missing = f.text("cpu_cgroup_missing");
    s.disabled = f.texts("disabled");
    s.disabled_reason = f.text("disabled_reason");
    s.identity_missing = f.text("identity_missing");
    s.ipc_namespace_off = f.text("ipc_namespace_off");
    s.proc_writes = f.text("proc_writes");
    return s;
}

void LayerReport::add(const std::string& layer, bool ok, const std::string& why_not) {
    if (ok)
        applied.push_back(layer);
    else
        missing[layer] = why_not.empty() ? "not available" : why_not;
}

json LayerReport::to_json() const {
    return json{{"applied", applied}, {"missing", missing}};
}

LayerReport LayerReport::from_json(const json& j) {
    Fields f(j, "layer report");
    LayerReport r;
    r.applied = f.texts("applied");
    for (const auto& [layer, why] : f.object("missing").items()) {
        if (!why.is_string())
            throw ProtocolError("layer report: reason for " + layer + " is not text");
        r.missing[layer] = why.get<std::string>();
    }
    return r;
}

}  // namespace kbench::sandbox
