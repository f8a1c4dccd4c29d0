#include "confinement/memory_cgroup.hpp"

#include <unistd.h>

#include <fstream>
#include <sstream>

#include "confinement/cpu_cgroup.hpp"

namespace kbench::sandbox {
namespace {

std::string read_text(const std::string& path) {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

}  // namespace

MemoryCgroups::MemoryCgroups() {
    std::string v1_path = cgroup_path("/proc/self/cgroup", "memory");
    std::string v2_path = cgroup_path("/proc/self/cgroup", "");
    if (!v1_path.empty()) {
        std::string dir = "/sys/fs/cgroup/memory" + v1_path;
        if (writable_dir(dir)) {
            root_ = dir;
            remove_stale_cgroups(root_);
            return;
        }
        missing_ = "the memory cgroup " + dir + " is not writable";
    }
    for (const char* mount : {"/sys/fs/cgroup", "/sys/fs/cgroup/unified"}) {
        std::string own = std::string(mount) + v2_path;
        if (v2_path.empty() || read_text(std::string(mount) + "/cgroup.controllers").empty())
            continue;
        // cgroup v2 enables no controller below a cgroup that holds processes (but the root):
        // where kbench's own cgroup holds it (and whatever started it), its sandboxes' cgroups
        // go below the nearest ancestor that has the memory controller enabled for its
        // children, or can have it, beside kbench's own cgroup. No process is moved but the
        // sandboxes', and the limits of every ancestor still hold.
        for (std::string dir = own;; dir = dir.substr(0, dir.rfind('/'))) {
            if (dir.size() < std::string(mount).size()) break;
            std::string subtree = read_text(dir + "/cgroup.subtree_control");
            bool ok = writable_dir(dir) &&
                      (subtree.find("memory") != std::string::npos ||
                       write_cgroup_file(dir + "/cgroup.subtree_control", "+memory"));
            if (!ok) {
                if (missing_.empty())
                    missing_ = "the memory controller cannot be enabled below " + own +
                               " or any cgroup above it (cgroup v2 lets no cgroup with "
                               "processes of its own do that)";
                if (dir == mount) break;
                continue;
            }
            // The pids controller too where it can be enabled: the task limit goes in the
            // same cgroup (limit_tasks), and without it the sandbox says so.
            if (subtree.find("pids") == std::string::npos)
                write_cgroup_file(dir + "/cgroup.subtree_control", "+pids");
            root_ = dir;
            v2_ = true;
            missing_.clear();
            remove_stale_cgroups(root_);
            return;
        }
    }
    if (missing_.empty())
        missing_ = "no writable memory cgroup (cgroup v1 or v2) for kbench's processes";
}

std::string MemoryCgroups::make(std::uint64_t limit_bytes) {
    if (root_.empty()) return {};
    std::string path = make_cgroup_folder(root_, "", counter_, missing_);
    if (path.empty()) return {};
    std::string limit = std::to_string(limit_bytes);
    bool ok = v2_ ? write_cgroup_file(path + "/memory.max", limit) &&
                        (write_cgroup_file(path + "/memory.swap.max", "0") || true)
                  : write_cgroup_file(path + "/memory.limit_in_bytes", limit);
    if (!ok) {
        missing_ = "cannot set the memory limit of " + path;
        ::rmdir(path.c_str());
        return {};
    }
    return path;
}

void MemoryCgroups::remove(const std::string& path) {
    if (!path.empty()) ::rmdir(path.c_str());
}

}  // namespace kbench::sandbox
