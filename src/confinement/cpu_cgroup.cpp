#include "confinement/cpu_cgroup.hpp"

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

struct MountLine {
    std::string root, point, type;
    std::vector<std::string> options;  // the superblock's
};

std::vector<MountLine> cgroup_mounts() {
    std::vector<MountLine> out;
    std::ifstream in("/proc/self/mountinfo");
    for (std::string line; std::getline(in, line);) {
        std::istringstream fields(line);
        std::string id, parent, device, root, point, word;
        fields >> id >> parent >> device >> root >> point;
        while (fields >> word && word != "-") {
        }
        MountLine m{root, point, "", {}};
        std::string source, options;
        fields >> m.type >> source >> options;
        if (m.type != "cgroup" && m.type != "cgroup2") continue;
        std::stringstream names(options);
        for (std::string name; std::getline(names, name, ',');) m.options.push_back(name);
        out.push_back(m);
    }
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
    for (const MountLine& m : cgroup_mounts())
        if (m.point == point) return m.root;
    return "/";
}

bool is_kbench_cgroup(const std::string& path) {
    auto slash = path.rfind('/');
    return path.compare(slash == std::string::npos ? 0 : slash + 1, 7, "kbench-") == 0;
}

}  // namespace

bool writable_dir(const std::string& path) {
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
    for (const MountLine& m : cgroup_mounts()) out.push_back(m.point);
    return out;
}

std::string cgroup2_mount() {
    for (const MountLine& m : cgroup_mounts())
        if (m.type == "cgroup2") return m.point;
    return {};
}

std::string cgroup1_mount(const std::string& controller) {
    for (const MountLine& m : cgroup_mounts())
        if (m.type == "cgroup")
            for (const std::string& o : m.options)
                if (o == controller) return m.point;
    return {};
}

std::string make_cgroup_folder(const std::string& root, const std::string& tag, unsigned& n,
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

std::string own_cgroup1_folder(const std::string& controller) {
    std::string v1 = cgroup1_mount(controller);
    std::string path = cgroup_path("/proc/self/cgroup", controller);
    if (v1.empty() || path.empty()) return {};
    return folder_of(v1, mount_root_of(v1), path);
}

void remove_stale_cgroups(const std::string& root) {
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

CpuCgroups::CpuCgroups() {
    // cgroup v2 first: cpu.stat is there in every cgroup, with no controller to enable.
    std::string v2 = cgroup2_mount();
    std::string own = cgroup_path("/proc/self/cgroup", "");
    if (!v2.empty() && !own.empty()) {
        std::string dir = folder_of(v2, mount_root_of(v2), own);
        if (writable_dir(dir)) {
            root_ = dir;
            remove_stale_cgroups(root_);
            return;
        }
        missing_ = "the cgroup " + dir + " is not writable";
    }
    if (std::string dir = own_cgroup1_folder("cpuacct"); !dir.empty()) {
        if (writable_dir(dir)) {
            root_ = dir;
            remove_stale_cgroups(root_);
            return;
        }
        missing_ = "the cpuacct cgroup " + dir + " is not writable";
    }
    if (missing_.empty()) missing_ = "no cgroup v2 hierarchy and no v1 cpuacct hierarchy here";
}

std::string CpuCgroups::make() {
    return root_.empty() ? std::string() : make_cgroup_folder(root_, "cpu", counter_, missing_);
}

void CpuCgroups::remove(const std::string& path) {
    if (!path.empty()) ::rmdir(path.c_str());
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
