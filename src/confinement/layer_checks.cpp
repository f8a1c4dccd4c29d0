#include "confinement/layer_checks.hpp"
#include "confinement/mountinfo.hpp"

#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <climits>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <string_view>

namespace kbench::sandbox {
namespace {

// What a check reads of the process: its /proc folder, read lazily, once each.
class Proc {
  public:
    explicit Proc(pid_t pid) : dir_("/proc/" + std::to_string(pid)) {}

    // The value of a line of /proc/<pid>/status ("Seccomp" -> "2"); nullopt where unreadable.
    const std::string* status(const std::string& key) {
        if (!status_read_) {
            status_read_ = true;
            std::ifstream in(dir_ + "/status");
            for (std::string line; std::getline(in, line);) {
                auto colon = line.find(':');
                if (colon == std::string::npos) continue;
                std::string value = line.substr(colon + 1);
                value.erase(0, value.find_first_not_of(" \t"));
                status_[line.substr(0, colon)] = value;
            }
        }
        auto it = status_.find(key);
        return it == status_.end() ? nullptr : &it->second;
    }

    // The namespace a link of /proc/<pid>/ns names ("net:[4026531840]"); empty where
    // unreadable.
    std::string ns(const std::string& kind) const { return link(dir_ + "/ns/" + kind); }

    std::string file(const std::string& name) const {
        std::ifstream in(dir_ + "/" + name);
        std::stringstream s;
        s << in.rdbuf();
        return s.str();
    }

    static std::string link(const std::string& path) {
        char buf[PATH_MAX];
        ssize_t n = ::readlink(path.c_str(), buf, sizeof buf - 1);
        return n > 0 ? std::string(buf, std::size_t(n)) : std::string();
    }

  private:
    std::string dir_;
    bool status_read_ = false;
    std::map<std::string, std::string> status_;
};

LayerCheck confirmed() {
    return {LayerCheck::confirmed, ""};
}
LayerCheck contradicted(std::string why) {
    return {LayerCheck::contradicted, std::move(why)};
}
LayerCheck unreadable(std::string why) {
    return {LayerCheck::unreadable, std::move(why)};
}

// In a namespace of that kind other than this process's.
LayerCheck own_namespace(Proc& p, const std::string& kind) {
    std::string theirs = p.ns(kind), ours = Proc::link("/proc/self/ns/" + kind);
    if (theirs.empty() || ours.empty()) return unreadable("its ns/" + kind + " cannot be read");
    if (theirs == ours) return contradicted("it is in this process's " + kind + " namespace");
    return confirmed();
}

// A status line with that value.
LayerCheck status_is(Proc& p, const std::string& key, const std::string& value) {
    const std::string* seen = p.status(key);
    if (!seen) return unreadable("its status has no " + key);
    if (*seen != value) return contradicted("its status says " + key + " " + *seen);
    return confirmed();
}

// In the kbench cgroup at folder (by the folder's name, in whatever hierarchy it is).
LayerCheck in_cgroup(Proc& p, const std::string& folder) {
    std::string text = p.file("cgroup");
    if (text.empty()) return unreadable("its cgroup file cannot be read");
    std::string name = folder.substr(folder.rfind('/') + 1);
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) {
        auto slash = line.rfind('/');
        if (slash != std::string::npos && line.compare(slash + 1, std::string::npos, name) == 0)
            return confirmed();
    }
    return contradicted("it is not in " + folder);
}

LayerCheck no_new_privs(Proc& p) {
    return status_is(p, "NoNewPrivs", "1");
}

using Checker = std::function<LayerCheck(Proc&, const LockdownSpec&)>;

// One check a layer of layer_table().
const std::map<std::string, Checker, std::less<>>& checks() {
    static const std::map<std::string, Checker, std::less<>> table = {
        {"identity",
         [](Proc& p, const LockdownSpec& spec) {
             // Under root, the dedicated user; otherwise a user namespace of its own.
             if (::geteuid() != 0) return own_namespace(p, "user");
             const std::string* uid = p.status("Uid");
             if (!uid) return unreadable("its status has no Uid");
             std::istringstream ids(*uid);
             for (long long id; ids >> id;)
                 if (id != spec.uid) return contradicted("its status says Uid " + *uid);
             return confirmed();
         }},
        {"pid_namespace", [](Proc& p, const LockdownSpec&) { return own_namespace(p, "pid"); }},
        {"mount_namespace", [](Proc& p, const LockdownSpec&) { return own_namespace(p, "mnt"); }},
        {"network_namespace", [](Proc& p, const LockdownSpec&) { return own_namespace(p, "net"); }},
        {"ipc_namespace", [](Proc& p, const LockdownSpec&) { return own_namespace(p, "ipc"); }},
        // Landlock leaves no trace in /proc: what is checked is its precondition.
        {"landlock", [](Proc& p, const LockdownSpec&) { return no_new_privs(p); }},
        {"event_limits",
         [](Proc& p, const LockdownSpec&) {
             std::istringstream lines(p.file("limits"));
             for (std::string line; std::getline(lines, line);) {
                 if (line.rfind("Max open files", 0) != 0) continue;
                 std::istringstream fields(line.substr(14));
                 std::string soft, hard;
                 fields >> soft >> hard;
                 auto within = [](const std::string& v) {
                     return v != "unlimited" && !v.empty() && std::stoull(v) <= kOpenFiles;
                 };
                 if (within(soft) && within(hard)) return confirmed();
                 return contradicted("its open-file limit is " + soft + " / " + hard);
             }
             return unreadable("its limits cannot be read");
         }},
        {"seccomp", [](Proc& p, const LockdownSpec&) { return status_is(p, "Seccomp", "2"); }},
        {"capabilities",
         [](Proc& p, const LockdownSpec&) {
             for (const char* set : {"CapEff", "CapPrm"}) {
                 LayerCheck c = status_is(p, set, "0000000000000000");
                 if (c.result != LayerCheck::confirmed) return c;
             }
             return no_new_privs(p);
         }},
        {"memory_limit",
         [](Proc& p, const LockdownSpec& spec) { return in_cgroup(p, spec.cgroup); }},
        {"pids_limit",
         [](Proc& p, const LockdownSpec& spec) { return in_cgroup(p, spec.pids_cgroup); }},
        {"cpu_cgroup",
         [](Proc& p, const LockdownSpec& spec) { return in_cgroup(p, spec.cpu_cgroup); }},
        {"disk_quota",
         [](Proc& p, const LockdownSpec& spec) {
             std::string text = p.file("mountinfo");
             if (text.empty()) return unreadable("its mountinfo cannot be read");
             for (const std::string& given : spec.writable) {
                 // As the kernel names it: with the links on its path resolved.
                 char real[PATH_MAX];
                 std::string folder = ::realpath(given.c_str(), real) ? real : given;
                 bool found = false;
                 for (const MountEntry& m : parse_mountinfo(text)) {
                     // kbench's own: of the quota's size, to a page (a tmpfs the host had
                     // there is not).
                     unsigned long long kib = std::strtoull(m.option("size").c_str(), nullptr, 10);
                     unsigned long long bytes = kib * 1024, want = spec.disk_bytes;
                     found = found || (m.point == folder && m.type == "tmpfs" &&
                                       (bytes > want ? bytes - want : want - bytes) < 65536);
                 }
                 if (!found) return contradicted("no tmpfs of its own at " + given);
             }
             return confirmed();
         }},
    };
    return table;
}

}  // namespace

bool layer_has_check(const std::string& layer) {
    return checks().count(layer) > 0;
}

LayerCheck check_layer(const std::string& layer, pid_t pid, const LockdownSpec& spec) {
    auto it = checks().find(layer);
    if (it == checks().end()) return unreadable("no check for " + layer);
    if (pid <= 0) return unreadable("no process");
    Proc p(pid);
    return it->second(p, spec);
}

void check_layers(LayerReport& report, pid_t pid, const LockdownSpec& spec) {
    std::vector<std::string> applied;
    for (const std::string& layer : report.applied) {
        LayerCheck c = check_layer(layer, pid, spec);
        if (c.result == LayerCheck::contradicted)
            report.missing[layer] = "its step reported no error, but " + c.why;
        else
            applied.push_back(layer);
    }
    report.applied = std::move(applied);
}

}  // namespace kbench::sandbox
