#include "confinement/pids_cgroup.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include "confinement/cpu_cgroup.hpp"

namespace kbench::sandbox {
PidsCgroups::PidsCgroups() {
    std::string dir = own_cgroup1_folder("pids");
    if (dir.empty())
        missing_ = "no v1 pids hierarchy here (on cgroup v2 the memory cgroup holds the limit)";
    else if (!writable_dir(dir))
        missing_ = "the pids cgroup " + dir + " is not writable";
    else
        root_ = dir;
    if (!root_.empty()) remove_stale_cgroups(root_);
}

std::string PidsCgroups::make(unsigned max_tasks) {
    if (root_.empty()) return {};
    std::string path = make_cgroup_folder(root_, "pids", counter_, missing_);
    if (path.empty()) return {};
    if (!write_cgroup_file(path + "/pids.max", std::to_string(max_tasks))) {
        missing_ = "cannot set the task limit of " + path;
        ::rmdir(path.c_str());
        return {};
    }
    return path;
}

void PidsCgroups::remove(const std::string& path) {
    if (!path.empty()) ::rmdir(path.c_str());
}

std::string limit_tasks(const std::string& folder, unsigned max_tasks) {
    struct stat st {};
    if (::stat((folder + "/pids.max").c_str(), &st) != 0)
        return "the pids controller is not enabled for " + folder;
    if (!write_cgroup_file(folder + "/pids.max", std::to_string(max_tasks)))
        return "cannot set the task limit of " + folder;
    return {};
}

}  // namespace kbench::sandbox
