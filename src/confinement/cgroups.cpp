#include "confinement/cgroups.hpp"
#include "confinement/mountinfo.hpp"

#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

namespace kbench::sandbox {
namespace {

// The cgroup filesystems this process sees.
std::vector<MountEntry> cgroup_mounts() {
    std::vector<MountEntry> out;
    for (MountEntry& m : own_mounts())
        if (m.type == "cgroup" || m.type == "cgroup2") out.push_back(std::move(m));
    return out;
}

// The folder of cgroup path under a mount whose root may itself be a cgroup below the
// hierarchy's (a container's view).
std::string folder_of(const std::string& mount_point, const std::string& mount_root,
                      const std::string& path) {
    std::string below = path;
    if (mount_root != "/" && below.rfind(mount_root, 0) == 0)
        below = below.substr(mount_root.size());
    if (below == "/") below.clear();
    return mount_point + below;
}

std::string mount_root_of(const std::string& point) {
    for (const MountEntry& m : cgroup_mounts())
        if (m.point == point) return m.root;
    return "/";
}

bool is_kbench_cgroup(const std::string& path) {
    auto slash = path.rfind('/');
    return path.compare(slash == std::string::npos ? 0 : slash + 1, 7, "kbench-") == 0;
}

}  // namespace

static bool writable_dir(const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode) &&
           ::access(path.c_str(), W_OK) == 0;
}

std::string cgroup_path(const std::string& proc_file, const std::string& controller) {
    std::ifstream in(proc_file);
    for (std::string line; std::getline(in, line);) {
        auto first = line.find(':'), second = line.find(':', first + 1);
        if (first == std::string::npos || second == std::string::npos) continue;
        std::string controllers = line.substr(first + 1, second - first - 1);
        std::string path = line.substr(second + 1);
        if (controller.empty()) {
            if (controllers.empty()) return path;
            continue;
        }
        std::stringstream names(controllers);
        for (std::string name; std::getline(names, name, ',');)
            if (name == controller) return path;
    }
    return {};
}

std::vector<std::string> cgroup_mount_points() {
    std::vector<std::string> out;
    for (const MountEntry& m : cgroup_mounts()) out.push_back(m.point);
    return out;
}

std::string cgroup2_mount() {
    for (const MountEntry& m : cgroup_mounts())
        if (m.type == "cgroup2") return m.point;
    return {};
}

std::string cgroup1_mount(const std::string& controller) {
    for (const MountEntry& m : cgroup_mounts())
        if (m.type == "cgroup")
            for (const std::string& o : m.options)
                if (o == controller) return m.point;
    return {};
}

static std::string make_cgroup_folder(const std::string& root, const std::string& tag, unsigned& n,
                                      std::string& missing) {
    std::string path =
        root + "/kbench-" + std::to_string(::getpid()) + "-" + tag + std::to_string(n++);
    if (::mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) {
        missing = "cannot make " + path + ": " + std::strerror(errno);
        return {};
    }
    return path;
}

bool write_cgroup_file(const std::string& path, const std::string& text) {
    std::ofstream out(path);
    out << text;
    out.flush();
    return bool(out);
}

static std::string own_cgroup1_folder(const std::string& controller) {
    std::string v1 = cgroup1_mount(controller);
    std::string path = cgroup_path("/proc/self/cgroup", controller);
    if (v1.empty() || path.empty()) return {};
    return folder_of(v1, mount_root_of(v1), path);
}

static void remove_stale_cgroups(const std::string& root) {
    DIR* dir = ::opendir(root.c_str());
    if (!dir) return;
    std::vector<std::string> stale;
    while (dirent* e = ::readdir(dir)) {
        std::string name = e->d_name;
        if (name.rfind("kbench-", 0) != 0) continue;
        char* end = nullptr;
        long pid = std::strtol(name.c_str() + 7, &end, 10);
        if (pid <= 0 || !end || *end != '-') continue;
        if (::kill(pid_t(pid), 0) == 0 || errno == EPERM) continue;  // its kbench still runs
        stale.push_back(root + "/" + name);
    }
    ::closedir(dir);
    for (const std::string& path : stale) ::rmdir(path.c_str());  // fails while it holds any
}

namespace {

std::string read_text(const std::string& path) {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

// The folder new memory cgroups go in, found once: the v1 memory hierarchy where this process
// has a writable one; else cgroup v2, where no controller is enabled below a cgroup that holds
// processes (but the root): where kbench's own cgroup holds it (and whatever started it), its
// sandboxes' cgroups go below the nearest ancestor that has the memory controller enabled for
// its children, or can have it, beside kbench's own cgroup. No process is moved but the
// sandboxes', and the limits of every ancestor still hold.
std::string find_memory_root(bool& v2, std::string& missing) {
    if (std::string dir = own_cgroup1_folder("memory"); !dir.empty()) {
        if (writable_dir(dir)) return dir;
        missing = "the memory cgroup " + dir + " is not writable";
    }
    std::string mount = cgroup2_mount();
    std::string own = cgroup_path("/proc/self/cgroup", "");
    if (mount.empty() || own.empty() || read_text(mount + "/cgroup.controllers").empty()) {
        if (missing.empty())
            missing = "no writable memory cgroup (cgroup v1 or v2) for kbench's processes";
        return {};
    }
    std::string top = folder_of(mount, mount_root_of(mount), "/");
    for (std::string dir = folder_of(mount, mount_root_of(mount), own);;
         dir = dir.substr(0, dir.rfind('/'))) {
        if (dir.size() < top.size()) break;
        std::string subtree = read_text(dir + "/cgroup.subtree_control");
        if (writable_dir(dir) && (subtree.find("memory") != std::string::npos ||
                                  write_cgroup_file(dir + "/cgroup.subtree_control", "+memory"))) {
            // The pids controller too where it can be enabled: the task limit goes in the
            // same cgroup, and without it the sandbox says so.
            if (subtree.find("pids") == std::string::npos)
                write_cgroup_file(dir + "/cgroup.subtree_control", "+pids");
            v2 = true;
            missing.clear();
            return dir;
        }
        if (missing.empty())
            missing = "the memory controller cannot be enabled below " + own +
                      " or any cgroup above it (cgroup v2 lets no cgroup with processes of its "
                      "own do that)";
        if (dir == top) break;
    }
    return {};
}

// The folder new CPU-counting cgroups go in: cgroup v2 first (cpu.stat is in every cgroup, with
// no controller to enable), else the v1 cpuacct hierarchy.
std::string find_cpu_root(std::string& missing) {
    std::string v2 = cgroup2_mount();
    std::string own = cgroup_path("/proc/self/cgroup", "");
    if (!v2.empty() && !own.empty()) {
        std::string dir = folder_of(v2, mount_root_of(v2), own);
        if (writable_dir(dir)) return dir;
        missing = "the cgroup " + dir + " is not writable";
    }
    if (std::string dir = own_cgroup1_folder("cpuacct"); !dir.empty()) {
        if (writable_dir(dir)) return dir;
        missing = "the cpuacct cgroup " + dir + " is not writable";
    }
    if (missing.empty()) missing = "no cgroup v2 hierarchy and no v1 cpuacct hierarchy here";
    return {};
}

}  // namespace

Cgroups::Cgroups() {
    memory_root_ = find_memory_root(memory_v2_, memory_missing_);
    if (std::string dir = own_cgroup1_folder("pids"); dir.empty())
        pids_missing_ =
            "no v1 pids hierarchy here (on cgroup v2 the memory cgroup holds the limit)";
    else if (!writable_dir(dir))
        pids_missing_ = "the pids cgroup " + dir + " is not writable";
    else
        pids_root_ = dir;
    cpu_root_ = find_cpu_root(cpu_missing_);
    for (const std::string* root : {&memory_root_, &pids_root_, &cpu_root_})
        if (!root->empty()) remove_stale_cgroups(*root);
}

Cgroups::Made Cgroups::make(std::uint64_t memory_bytes, unsigned max_tasks, bool count_cpu) {
    Made m;
    if (memory_bytes == 0) {
        m.memory_missing = "no memory limit was asked for";
    } else if (memory_root_.empty()) {
        m.memory_missing = memory_missing_;
    } else if (std::string path = make_cgroup_folder(memory_root_, "", counter_, m.memory_missing);
               !path.empty()) {
        std::string limit = std::to_string(memory_bytes);
        bool ok = memory_v2_ ? write_cgroup_file(path + "/memory.max", limit) &&
                                   (write_cgroup_file(path + "/memory.swap.max", "0") || true)
                             : write_cgroup_file(path + "/memory.limit_in_bytes", limit);
        if (ok)
            m.memory = path;
        else {
            m.memory_missing = "cannot set the memory limit of " + path;
            ::rmdir(path.c_str());
        }
    }
    // On cgroup v2 a process is in one cgroup: its memory cgroup holds the rest.
    const bool one = memory_v2_ && !m.memory.empty();
    if (max_tasks > 0) {
        std::string path = one ? m.memory
                           : pids_root_.empty()
                               ? std::string()
                               : make_cgroup_folder(pids_root_, "pids", counter_, m.pids_missing);
        struct stat st {};
        if (path.empty()) {
            if (m.pids_missing.empty())
                m.pids_missing = m.memory.empty() && !m.memory_missing.empty()
                                     ? "no memory cgroup to hold the task limit (" +
                                           m.memory_missing + ") and " + pids_missing_
                                     : pids_missing_;
        } else if (one && ::stat((path + "/pids.max").c_str(), &st) != 0) {
            m.pids_missing = "the pids controller is not enabled for " + path;
        } else if (!write_cgroup_file(path + "/pids.max", std::to_string(max_tasks))) {
            m.pids_missing = "cannot set the task limit of " + path;
            if (!one) ::rmdir(path.c_str());
        } else {
            m.pids = path;
        }
    }
    if (count_cpu) {
        m.cpu = one                 ? m.memory
                : cpu_root_.empty() ? std::string()
                                    : make_cgroup_folder(cpu_root_, "cpu", counter_, m.cpu_missing);
        if (m.cpu.empty() && m.cpu_missing.empty()) m.cpu_missing = cpu_missing_;
    }
    return m;
}

void Cgroups::remove(const Made& made) {
    // Inner ones first; one folder may serve several.
    for (const std::string* path : {&made.cpu, &made.pids, &made.memory})
        if (!path->empty()) ::rmdir(path->c_str());
}

std::optional<CgroupCpuClock> CgroupCpuClock::of(pid_t pid) {
    std::string proc = "/proc/" + std::to_string(pid) + "/cgroup";
    CgroupCpuClock clock;
    std::string v2 = cgroup2_mount();
    std::string path = cgroup_path(proc, "");
    if (!v2.empty() && is_kbench_cgroup(path)) {
        clock.file_ = folder_of(v2, mount_root_of(v2), path) + "/cpu.stat";
        clock.v2_ = true;
    } else {
        std::string v1 = cgroup1_mount("cpuacct");
        path = cgroup_path(proc, "cpuacct");
        if (v1.empty() || !is_kbench_cgroup(path)) return std::nullopt;
        clock.file_ = folder_of(v1, mount_root_of(v1), path) + "/cpuacct.usage";
    }
    if (clock.seconds() < 0) return std::nullopt;
    return clock;
}

std::optional<CgroupCpuClock> CgroupCpuClock::at(const std::string& folder) {
    CgroupCpuClock clock;
    struct stat st {};
    clock.v2_ = ::stat((folder + "/cpu.stat").c_str(), &st) == 0;
    clock.file_ = folder + (clock.v2_ ? "/cpu.stat" : "/cpuacct.usage");
    if (clock.seconds() < 0) return std::nullopt;
    return clock;
}

double CgroupCpuClock::seconds() const {
    std::ifstream in(file_);
    if (!in) return -1;
    if (!v2_) {
        unsigned long long ns = 0;
        return in >> ns ? double(ns) * 1e-9 : -1;
    }
    std::string name;
    unsigned long long value = 0;
    while (in >> name >> value)
        if (name == "usage_usec") return double(value) * 1e-6;
    return -1;
}

}  // namespace kbench::sandbox
