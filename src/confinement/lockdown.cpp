#include "confinement/lockdown.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <functional>
#include <sstream>
#include <stdexcept>
#include <string_view>
#include <thread>

#include "confinement/cgroups.hpp"
#include "confinement/landlock.hpp"
#include "confinement/layer_checks.hpp"
#include "confinement/proc_scan.hpp"
#include "confinement/seccomp.hpp"
#include "core/error.hpp"
#include "core/files.hpp"
#include "protocol/framing.hpp"

namespace kbench::sandbox {

namespace {

// The relay, the namespace's init and the body talk to the parent over one stream socket, a
// line a message, each written with one write() so lines never mix (the init's line carries the
// descriptors of the folders it made). The relay and the init run between
// fork and exit in a copy of a process that may have had other threads, so they use system
// calls and stack buffers only.
void put_line(int fd, const char* text, std::size_t size) {
    while (::write(fd, text, size) < 0 && errno == EINTR) {
    }
}

int try_call(int result) {
    return result == 0 ? 0 : errno;
}

bool write_proc_file(const char* path, const char* text) {
    int fd = ::open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0) return false;
    bool ok = ::write(fd, text, std::strlen(text)) == ssize_t(std::strlen(text));
    ::close(fd);
    return ok;
}

// A user namespace whose only ids are the caller's own, with every capability inside it.
int enter_user_namespace() {
    uid_t uid = ::geteuid();
    gid_t gid = ::getegid();
    if (::unshare(CLONE_NEWUSER) != 0) return errno;
    char map[64];
    std::size_t at = 0;
    put_number(map, at, sizeof map - 1, uid);
    put_text(map, at, sizeof map - 1, " ");
    put_number(map, at, sizeof map - 1, uid);
    put_text(map, at, sizeof map - 1, " 1");
    map[at] = '\0';
    if (!write_proc_file("/proc/self/uid_map", map)) return errno ? errno : EPERM;
    write_proc_file("/proc/self/setgroups", "deny");
    at = 0;
    put_number(map, at, sizeof map - 1, gid);
    put_text(map, at, sizeof map - 1, " ");
    put_number(map, at, sizeof map - 1, gid);
    put_text(map, at, sizeof map - 1, " 1");
    map[at] = '\0';
    write_proc_file("/proc/self/gid_map", map);
    return 0;
}

constexpr int kDisabled = -1;
constexpr int kNotMade = -2;           // the spec says why (ipc_namespace_off), or none asked
constexpr int kNoMountNamespace = -3;  // disk_quota: no mount namespace to make it in
constexpr int kNoFolders = -4;         // disk_quota: its folders' descriptors did not come

// Sent by kbench (from outside the namespace) to a sandbox's init: stop every other process of
// the namespace, or continue them (pin_process_tree).
// The init's handler of both: obeyed only from outside the namespace (where the sender's pid
// reads 0), never from the candidate's processes inside it.
void on_freeze_or_thaw(int number, siginfo_t* info, void*) {
    if (info->si_code != SI_USER || info->si_pid != 0) return;
    int saved = errno;
    ::kill(-1, number == freeze_signal() ? SIGSTOP : SIGCONT);
    errno = saved;
}

// Closes every descriptor but keep (no allocation).
void close_all_but(int keep) {
    for (int fd = 0; fd < 1024; ++fd)
        if (fd != keep) ::close(fd);
    ::syscall(SYS_close_range, 1024u, ~0u, 0u);
}

// No capability to come back through exec: uid 0 gains none there, the bounding set is empty.
// Needs CAP_SETPCAP, so it comes before a change of user.
void limit_capability_bounds() {
    ::prctl(PR_SET_SECUREBITS, (1 << 0) | (1 << 1));  // SECBIT_NOROOT and its lock
    for (int cap = 0; cap <= 63; ++cap) {
        if (::prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 && errno == EINVAL) break;
    }
    ::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
}

// Capabilities: none in any set.
std::string drop_capabilities() {
    limit_capability_bounds();
    __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct data[2] = {};
    if (::syscall(SYS_capset, &header, data) != 0)
        return std::string("capset: ") + std::strerror(errno);
    std::ifstream status("/proc/self/status");
    for (std::string line; std::getline(status, line);)
        if (line.rfind("CapEff:", 0) == 0 && line.find_first_not_of("0\t ", 7) != std::string::npos)
            return "capabilities remain: " + line;
    return {};
}

std::string errno_text(int error) {
    return std::strerror(error);
}

std::string namespace_reason(int error, bool root) {
    if (error == kDisabled) return "";
    if (root) return errno_text(error);
    return errno_text(error) +
           " (unprivileged user namespaces are not allowed here; on Ubuntu, AppArmor restricts "
           "them: sysctl kernel.apparmor_restrict_unprivileged_userns)";
}

// keep[i] becomes descriptor i; every other descriptor is closed.
void arrange_fds(const std::vector<int>& keep) {
    std::vector<int> high;
    for (int fd : keep) high.push_back(fd >= 0 ? ::fcntl(fd, F_DUPFD_CLOEXEC, 100) : -1);
    for (std::size_t i = 0; i < high.size(); ++i) {
        if (high[i] >= 0)
            ::dup2(high[i], int(i));
        else
            ::close(int(i));
    }
    ::syscall(SYS_close_range, unsigned(high.size()), ~0u, 0u);
}

// The flags a read-only bind remount of path must keep (in a user namespace the kernel refuses
// one that would clear them).
unsigned long kept_mount_flags(const char* path) {
    unsigned long flags = 0;
    struct statvfs st {};
    if (::statvfs(path, &st) == 0) {
        if (st.f_flag & ST_NOSUID) flags |= MS_NOSUID;
        if (st.f_flag & ST_NODEV) flags |= MS_NODEV;
        if (st.f_flag & ST_NOEXEC) flags |= MS_NOEXEC;
        if (st.f_flag & ST_NOATIME) flags |= MS_NOATIME;
        if (st.f_flag & ST_NODIRATIME) flags |= MS_NODIRATIME;
        if (st.f_flag & ST_RELATIME) flags |= MS_RELATIME;
    }
    return flags;
}

// An empty, read-only folder over path in this mount namespace; false (errno set) if not.
bool cover(const char* path) {
    return ::mount("tmpfs", path, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
                   "size=4k,mode=0555") == 0;
}

// Every cgroup (v1 or v2) mount of this mount namespace covered by an empty, read-only folder:
// nothing there to write, and no other sandbox's counters to read (the reference's CPU time
// would say when it works); false (errno set) if one could not be.
bool cover_cgroup_mounts() {
    for (const std::string& point : cgroup_mount_points())
        if (!cover(point.c_str())) return false;
    return true;
}

// At most kOpenFiles descriptors open (soft and hard limit, so that it cannot be raised): what
// one poll can list, and what a sandbox holds of the machine's files. The refusals of
// seccomp.hpp's refuse_uncharged_wakeups are the other half of the layer. Empty on success, else
// why not.
std::string limit_events() {
    rlimit files{};
    if (::getrlimit(RLIMIT_NOFILE, &files) != 0) return "getrlimit: " + errno_text(errno);
    files.rlim_cur = std::min<rlim_t>(files.rlim_cur, kOpenFiles);
    files.rlim_max = std::min<rlim_t>(files.rlim_max, kOpenFiles);
    if (::setrlimit(RLIMIT_NOFILE, &files) != 0) return "setrlimit: " + errno_text(errno);
    return {};
}

// The body's process: every layer that applies, in an order where each still has the rights it
// needs, then the body.
[[noreturn]] void run_body(int report, const LockdownSpec& spec, bool private_shm,
                           bool private_proc, const std::function<void()>& after_fork,
                           const std::vector<int>& keep, const std::function<int()>& body) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (after_fork) after_fork();
    LayerReport layers;
    const bool root = ::geteuid() == 0;

    // Memory and tasks: join the cgroups made for this process (before giving up root); on
    // cgroup v2 they are one.
    struct Join {
        const char* layer;
        const std::string& folder;
        const std::string& missing;
        const char* none;
        bool joined = false;
        std::string why;
    };
    Join joins[] = {
        {"memory_limit", spec.cgroup, spec.cgroup_missing, "no memory cgroup can be made here"},
        {"pids_limit", spec.pids_cgroup, spec.pids_cgroup_missing,
         "no pids cgroup can be made here"}};
    for (Join& j : joins) {
        if (!spec.allows(j.layer)) {
            layers.add(j.layer, false, spec.off_reason(j.layer));
        } else if (j.folder.empty()) {
            layers.add(j.layer, false, j.missing.empty() ? j.none : j.missing);
        } else {
            // Closed at once: a file open for writing keeps its mount from being covered.
            j.joined = write_cgroup_file(j.folder + "/cgroup.procs", "0\n");
            j.why = "cannot join " + j.folder + ": " + errno_text(errno);
        }
    }
    // The cgroups it is in (these, and the CPU cgroup the relay joined) are kbench's to
    // choose: in its own mount namespace every cgroup mount is covered once it has joined them
    // (without Landlock, a process of uid 0 could otherwise move itself out of its memory and
    // CPU cgroups by writing the root's cgroup.procs). Without a mount namespace only Landlock
    // or its identity keep it in.
    if (private_shm && !cover_cgroup_mounts()) {
        std::string uncovered =
            "its cgroup mounts could not be covered (it could leave its cgroup): " +
            errno_text(errno);
        for (Join& j : joins)
            if (j.joined) {
                j.joined = false;
                j.why = uncovered;
            }
    }
    for (const Join& j : joins)
        if (spec.allows(j.layer) && !j.folder.empty()) layers.add(j.layer, j.joined, j.why);
    // Under memory pressure the kernel kills this process before kbench's own.
    std::ofstream("/proc/self/oom_score_adj") << "1000\n";

    bool nnp = ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0;
    std::string nnp_error = nnp ? "" : "no_new_privs: " + errno_text(errno);

    // The layers it applies to itself, in an order where each still has the rights it needs:
    // each step returns why it failed (empty: applied). A layer that is off is not applied.
    struct Step {
        const char* layer;
        std::function<std::string()> apply;
    };
    const Step steps[] = {
        {"landlock",
         [&] {
             // A /dev/shm of its own (the mount namespace's) it may write: the CUDA driver does.
             std::vector<std::string> writable = spec.writable;
             if (private_shm) writable.push_back("/dev/shm");
             // Only in a /proc of its own namespace, where no other process's folder is.
             if (private_proc && spec.proc_writes == "own")
                 writable.push_back("/proc/" + std::to_string(::getpid()));
             else if (private_proc && spec.proc_writes == "all")
                 writable.push_back("/proc");
             return nnp ? apply_landlock(writable) : nnp_error;
         }},
        // A dedicated user when kbench runs as root; otherwise the user namespace made by the
        // relay (reported there).
        {"identity",
         [&] {
             if (spec.uid < 0)
                 return spec.identity_missing.empty() ? std::string("no dedicated user was given")
                                                      : spec.identity_missing;
             if (spec.allows("capabilities")) limit_capability_bounds();
             if (::setgroups(0, nullptr) != 0) return "setgroups: " + errno_text(errno);
             if (::setresgid(gid_t(spec.gid), gid_t(spec.gid), gid_t(spec.gid)) != 0)
                 return "setresgid: " + errno_text(errno);
             if (::setresuid(uid_t(spec.uid), uid_t(spec.uid), uid_t(spec.uid)) != 0)
                 return "setresuid: " + errno_text(errno);
             return std::string();
         }},
        {"capabilities", [] { return drop_capabilities(); }},
        {"event_limits",
         [&] {
             std::string why = limit_events();
             return !why.empty() ? why : nnp ? refuse_uncharged_wakeups() : nnp_error;
         }},
        {"seccomp", [&] { return nnp ? apply_seccomp() : nnp_error; }},
    };
    for (const Step& step : steps) {
        if (std::string_view(step.layer) == "identity" && !root) continue;
        if (!spec.allows(step.layer)) {
            layers.add(step.layer, false, spec.off_reason(step.layer));
            continue;
        }
        std::string why = step.apply();
        layers.add(step.layer, why.empty(), why);
    }

    std::string line = "S " + layers.to_json().dump() + "\n";
    put_line(report, line.data(), line.size());
    ::close(report);
    arrange_fds(keep);
    ::_exit(body());
}

// In a mount namespace of its own: an empty tmpfs over spec.private_root, with the process's own
// folders under it bound back at their places. Runs after fork: no allocation. 0 or an errno.
int hide_other_folders(const LockdownSpec& spec) {
    const std::string& root = spec.private_root;
    if (root.empty()) return 0;
    constexpr int kMax = 16;
    int fds[kMax];
    const char* paths[kMax];
    int n = 0;
    auto under_root = [&](const std::string& path) {
        return path.size() > root.size() && path.compare(0, root.size(), root) == 0 &&
               path[root.size()] == '/';
    };
    auto close_kept = [&] {
        for (int i = 0; i < n; ++i) ::close(fds[i]);
    };
    int writable_count = 0;
    for (const auto* list : {&spec.writable, &spec.visible})
        for (const std::string& path : *list) {
            if (!under_root(path)) continue;
            int fd = n < kMax ? ::open(path.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC) : -1;
            if (fd < 0) {
                int error = n < kMax ? errno : E2BIG;
                close_kept();
                return error;
            }
            fds[n] = fd;
            paths[n++] = path.c_str();
            if (list == &spec.writable) writable_count = n;
        }
    int error = try_call(
        ::mount("tmpfs", root.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, "size=64k,mode=0711"));
    for (int i = 0; i < n && error == 0; ++i) {
        // The folders between the root and the kept one, then the kept one bound over the last.
        char path[4096];
        std::size_t length = std::strlen(paths[i]);
        if (length >= sizeof path) {
            error = ENAMETOOLONG;
            break;
        }
        std::memcpy(path, paths[i], length + 1);
        for (std::size_t at = root.size() + 1; at <= length && error == 0; ++at) {
            if (path[at] != '/' && path[at] != '\0') continue;
            char kept = path[at];
            path[at] = '\0';
            if (::mkdir(path, 0711) != 0 && errno != EEXIST) error = errno;
            path[at] = kept;
        }
        if (error != 0) break;
        char source[64];
        std::size_t at = 0;
        put_text(source, at, sizeof source - 1, "/proc/self/fd/");
        put_number(source, at, sizeof source - 1, fds[i]);
        source[at] = '\0';
        error = try_call(::mount(source, paths[i], nullptr, MS_BIND | MS_REC, nullptr));
        // What it is given to read stays read-only, whatever its owner and modes.
        // A remount keeps the flags it had (in a user namespace they may be locked).
        if (error == 0 && i >= writable_count) {
            unsigned long flags = MS_BIND | MS_REMOUNT | MS_RDONLY | kept_mount_flags(paths[i]);
            error = try_call(::mount(nullptr, paths[i], nullptr, flags, nullptr));
        }
    }
    close_kept();
    // Half hidden is worse than not at all: the layer is then reported missing.
    if (error != 0) ::umount2(root.c_str(), MNT_DETACH);
    return error;
}

// In a mount namespace of its own: a tmpfs of spec.disk_bytes over each writable folder, its
// owner the dedicated user (or the namespace's root). Runs after fork: no allocation. 0 or an
// errno; on an error none is left mounted.
int mount_quota_folders(const LockdownSpec& spec) {
    char options[160];
    std::size_t at = 0;
    put_text(options, at, sizeof options - 1, "mode=0700,size=");
    put_number(options, at, sizeof options - 1, (long long)spec.disk_bytes);
    put_text(options, at, sizeof options - 1, ",nr_inodes=");
    put_number(options, at, sizeof options - 1, kDiskFiles);
    if (spec.uid >= 0) {
        put_text(options, at, sizeof options - 1, ",uid=");
        put_number(options, at, sizeof options - 1, spec.uid);
        put_text(options, at, sizeof options - 1, ",gid=");
        put_number(options, at, sizeof options - 1, spec.gid);
    }
    options[at] = '\0';
    std::size_t mounted = 0;
    int error = 0;
    for (; mounted < spec.writable.size() && error == 0; ++mounted)
        error = try_call(::mount("tmpfs", spec.writable[mounted].c_str(), "tmpfs",
                                 MS_NOSUID | MS_NODEV, options));
    if (error != 0)
        for (std::size_t i = 0; i + 1 < mounted; ++i)
            ::umount2(spec.writable[i].c_str(), MNT_DETACH);
    return error;
}

// In a mount namespace of its own: each folder that every user may write (/tmp, /var/tmp)
// read-only but for the process's own writable folders under it, so that with Landlock or
// without, nothing it writes lands outside its quota. Runs after fork: no allocation. 0 or an
// errno.
int shared_folders_read_only(const LockdownSpec& spec) {
    for (const char* shared : {"/tmp", "/var/tmp"}) {
        struct stat st {};
        if (::stat(shared, &st) != 0 || !S_ISDIR(st.st_mode) || !(st.st_mode & S_IWOTH)) continue;
        std::size_t length = std::strlen(shared);
        // Its own folders there become mounts of their own first: they stay writable.
        for (const std::string& path : spec.writable) {
            if (path.size() <= length || path.compare(0, length, shared) != 0 ||
                path[length] != '/')
                continue;
            if (int error =
                    try_call(::mount(path.c_str(), path.c_str(), nullptr, MS_BIND, nullptr)))
                return error;
        }
        if (int error = try_call(::mount(shared, shared, nullptr, MS_BIND | MS_REC, nullptr)))
            return error;
        unsigned long flags = MS_BIND | MS_REMOUNT | MS_RDONLY | kept_mount_flags(shared);
        if (int error = try_call(::mount(nullptr, shared, nullptr, flags, nullptr))) return error;
    }
    return 0;
}

// The init's line, with a descriptor of each folder of the quota riding on it.
void put_line_with_folders(int fd, const char* text, std::size_t size, const LockdownSpec& spec) {
    constexpr std::size_t kMaxFolders = 8;
    int folders[kMaxFolders];
    std::size_t n = 0;
    for (; n < spec.writable.size() && n < kMaxFolders; ++n)
        folders[n] = ::open(spec.writable[n].c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    iovec iov{const_cast<char*>(text), size};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFolders)];
    bool all = n > 0;
    for (std::size_t i = 0; i < n; ++i) all = all && folders[i] >= 0;
    if (all) {
        msg.msg_control = control;
        msg.msg_controllen = CMSG_SPACE(sizeof(int) * n);
        cmsghdr* c = CMSG_FIRSTHDR(&msg);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int) * n);
        std::memcpy(CMSG_DATA(c), folders, sizeof(int) * n);
    }
    while (::sendmsg(fd, &msg, MSG_NOSIGNAL) < 0 && errno == EINTR) {
    }
    for (std::size_t i = 0; i < n; ++i)
        if (folders[i] >= 0) ::close(folders[i]);
}

// The namespace's init, or (without a PID namespace) a child subreaper in its place: starts the
// body, reaps what the body orphans, and when the body ends reports how, kills what is left and
// exits. With a PID namespace the kernel kills what is left when this process exits.
[[noreturn]] void run_init(int report, bool pid_namespace, const LockdownSpec& spec,
                           const std::function<void()>& after_fork, const std::vector<int>& keep,
                           const std::function<int()>& body, bool userns) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (!pid_namespace) ::prctl(PR_SET_CHILD_SUBREAPER, 1);
    int mount_error = kDisabled;
    if (spec.allows("mount_namespace")) {
        bool privileged = ::geteuid() == 0 || userns;
        mount_error = !privileged ? EPERM : try_call(::unshare(CLONE_NEWNS));
        if (mount_error == 0)
            mount_error = try_call(::mount("none", "/", nullptr, MS_REC | MS_PRIVATE, nullptr));
        if (mount_error == 0 && pid_namespace)
            mount_error = try_call(
                ::mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr));
        if (mount_error == 0)
            mount_error = try_call(
                ::mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "size=256m,mode=1777"));
        // Covered by an empty, read-only folder where the machine has them: POSIX message
        // queues through the host's mqueue mount, which belong to the host's IPC namespace
        // whatever the process's own; pressure-stall triggers (/proc/pressure, writable by
        // anyone), woken by a kernel thread, and pseudo-terminals (without /dev/pts, /dev/ptmx
        // makes none), whose input a kernel worker delivers: either walks the poll registrations
        // on them uncharged (seccomp.hpp's refuse_uncharged_wakeups).
        for (const char* folder : {"/dev/mqueue", "/proc/pressure", "/dev/pts"}) {
            struct stat st {};
            if (mount_error == 0 && ::stat(folder, &st) == 0 && S_ISDIR(st.st_mode))
                mount_error = cover(folder) ? 0 : errno;
        }
        if (mount_error == 0) mount_error = hide_other_folders(spec);
    }
    int quota_error = !spec.allows("disk_quota") ? kDisabled
                      : spec.disk_bytes == 0     ? kNotMade
                      : mount_error != 0         ? kNoMountNamespace
                                                 : shared_folders_read_only(spec);
    if (quota_error == 0) quota_error = mount_quota_folders(spec);
    pid_t body_pid = ::fork();
    if (body_pid == 0)
        run_body(report, spec, mount_error == 0, mount_error == 0 && pid_namespace, after_fork,
                 keep, body);
    // Installed once the body has its own: the body's processes have no use for it.
    if (pid_namespace) {
        struct sigaction action {};
        action.sa_sigaction = on_freeze_or_thaw;
        action.sa_flags = SA_SIGINFO | SA_RESTART;
        sigset_t both;
        sigemptyset(&both);
        for (int number : {freeze_signal(), thaw_signal()}) sigaddset(&both, number);
        // Neither handler runs inside the other.
        action.sa_mask = both;
        for (int number : {freeze_signal(), thaw_signal()}) ::sigaction(number, &action, nullptr);
        ::sigprocmask(SIG_UNBLOCK, &both, nullptr);
    }
    char line[128];
    std::size_t at = 0;
    put_text(line, at, sizeof line - 1, "B ");
    put_number(line, at, sizeof line - 1, mount_error);
    put_text(line, at, sizeof line - 1, " ");
    put_number(line, at, sizeof line - 1, body_pid);
    put_text(line, at, sizeof line - 1, " ");
    put_number(line, at, sizeof line - 1, quota_error);
    line[at++] = '\n';
    if (quota_error == 0)
        put_line_with_folders(report, line, at, spec);
    else
        put_line(report, line, at);
    close_all_but(report);
    int body_status = 0;
    bool known = false;
    while (body_pid > 0) {
        int status = 0;
        pid_t r = ::waitpid(-1, &status, __WALL);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) break;
        if (r == body_pid) {
            body_status = status;
            known = true;
            break;
        }
    }
    // What the body left behind: named in the report, then killed.
    char end[1024];
    at = 0;
    put_text(end, at, sizeof end - 2, known ? "E 1 " : "E 0 ");
    put_number(end, at, sizeof end - 2, body_status);
    pid_t self = ::getpid();
    int leftovers = 0;
    each_process([&](pid_t pid) {
        if (pid == self) return;
        if (!pid_namespace) {
            pid_t p = pid;
            for (int depth = 0; depth < 4096 && p > 1 && p != self; ++depth) p = parent_of(p);
            if (p != self) return;
        }
        char path[48], name[32];
        proc_path(path, pid, "comm");
        std::size_t n = read_small(path, name, sizeof name - 1);
        if (n > 0 && name[n - 1] == '\n') --n;
        name[n] = '\0';
        if (++leftovers <= 16) {
            put_text(end, at, sizeof end - 2, " ");
            for (std::size_t i = 0; i < n; ++i)
                if (name[i] == ' ' || name[i] == '\n') name[i] = '_';
            put_text(end, at, sizeof end - 2, n ? name : "?");
        }
    });
    end[at++] = '\n';
    put_line(report, end, at);
    if (!pid_namespace) {
        // No namespace to end them: kill whatever comes to this subreaper until nothing does.
        auto start = std::chrono::steady_clock::now();
        for (int round = 0; round < 100000; ++round) {
            bool found = false;
            each_process([&](pid_t pid) {
                if (pid != self && parent_of(pid) == self) {
                    found = true;
                    ::kill(pid, SIGKILL);
                }
            });
            while (::waitpid(-1, nullptr, WNOHANG | __WALL) > 0) {
            }
            if (!found) break;
            if (std::chrono::steady_clock::now() - start > std::chrono::seconds(10)) break;
        }
    }
    ::_exit(0);
}

// Descriptors that came with report lines, by report fd.
std::map<int, std::vector<int>>& pending_fds() {
    static std::map<int, std::vector<int>> pending;
    return pending;
}

// Reads one line from fd before the deadline (the fd is the report socket's parent end);
// descriptors that ride along go to pending_fds().
bool read_line(int fd, std::string& pending, std::string& line,
               std::chrono::steady_clock::time_point deadline) {
    for (;;) {
        auto newline = pending.find('\n');
        if (newline != std::string::npos) {
            line = pending.substr(0, newline);
            pending.erase(0, newline + 1);
            return true;
        }
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                        deadline - std::chrono::steady_clock::now())
                        .count();
        if (left <= 0) return false;
        pollfd p{fd, POLLIN, 0};
        int ready = ::poll(&p, 1, int(std::min<long long>(left, 1000)));
        if (ready < 0 && errno == EINTR) continue;
        if (ready <= 0) continue;
        char buf[4096];
        ssize_t n = receive_some(fd, buf, sizeof buf, pending_fds()[fd]);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        pending.append(buf, std::size_t(n));
    }
}

// Lines the parent read ahead of need, by report fd.
std::map<int, std::string>& pending_lines() {
    static std::map<int, std::string> pending;
    return pending;
}

}  // namespace

ConfinedProcess spawn_confined(const LockdownSpec& spec, const std::vector<int>& keep,
                               const std::function<void()>& after_fork,
                               const std::function<int()>& body, double timeout_s) {
    int pipe_fds[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pipe_fds) != 0)
        throw std::runtime_error(std::string("socketpair: ") + std::strerror(errno));
    const int report_read = pipe_fds[0], report = pipe_fds[1];
    const bool root = ::geteuid() == 0;
    const std::string cpu_procs = spec.cpu_cgroup.empty() ? "" : spec.cpu_cgroup + "/cgroup.procs";
    pid_t relay = ::fork();
    if (relay < 0) {
        int error = errno;
        ::close(report_read);
        ::close(report);
        throw std::runtime_error(std::string("fork: ") + std::strerror(error));
    }
    if (relay == 0) {
        // The relay: new namespaces for its children, then the init, then wait for it.
        ::close(report_read);
        ::setpgid(0, 0);
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);
        // CPU time: the cgroup that counts it for the judge, joined by the relay (the process
        // the judge knows), so that all that follows is in it. One that cannot join is counted
        // from its processes' own records instead, which the judge finds out by itself.
        int cpu_error = !spec.allows("cpu_cgroup") ? kDisabled : cpu_procs.empty() ? kNotMade : 0;
        if (cpu_error == 0) {
            int fd = ::open(cpu_procs.c_str(), O_WRONLY | O_CLOEXEC);
            if (fd < 0 || ::write(fd, "0\n", 2) != 2) cpu_error = errno ? errno : EIO;
            if (fd >= 0) ::close(fd);
        }
        bool want_ns = spec.allows("pid_namespace") || spec.allows("network_namespace") ||
                       spec.allows("mount_namespace") || spec.allows("ipc_namespace");
        // Without root, identity is a user namespace: none where every namespace is off.
        int user_error = !spec.allows("identity") ? kDisabled : kNotMade;
        if (!root && want_ns && spec.allows("identity")) user_error = enter_user_namespace();
        bool privileged = root || user_error == 0;
        int pid_error = !spec.allows("pid_namespace") ? kDisabled
                        : privileged                  ? try_call(::unshare(CLONE_NEWPID))
                                                      : EPERM;
        int net_error = !spec.allows("network_namespace") ? kDisabled
                        : privileged                      ? try_call(::unshare(CLONE_NEWNET))
                                                          : EPERM;
        // The relay's own: its children, the init and the body, are in it from their fork.
        int ipc_error = !spec.allows("ipc_namespace")     ? kDisabled
                        : !spec.ipc_namespace_off.empty() ? kNotMade
                        : privileged                      ? try_call(::unshare(CLONE_NEWIPC))
                                                          : EPERM;
        if (!root && user_error != 0 && user_error != kDisabled) {
            pid_error = pid_error == kDisabled ? kDisabled : user_error;
            net_error = net_error == kDisabled ? kDisabled : user_error;
            ipc_error = ipc_error == kDisabled || ipc_error == kNotMade ? ipc_error : user_error;
        }
        pid_t init = ::fork();
        if (init == 0)
            run_init(report, pid_error == 0, spec, after_fork, keep, body, user_error == 0);
        char line[128];
        std::size_t at = 0;
        put_text(line, at, sizeof line - 1, "A ");
        put_number(line, at, sizeof line - 1, init);
        for (int e : {user_error, pid_error, net_error, ipc_error, cpu_error}) {
            put_text(line, at, sizeof line - 1, " ");
            put_number(line, at, sizeof line - 1, e);
        }
        line[at++] = '\n';
        put_line(report, line, at);
        close_all_but(-1);
        int status = 0;
        while (init > 0 && ::waitpid(init, &status, 0) < 0 && errno == EINTR) {
        }
        ::_exit(0);
    }
    ::close(report);

    ConfinedProcess p;
    p.pid = relay;
    p.report_fd = report_read;
    auto deadline =
        std::chrono::steady_clock::now() + std::chrono::milliseconds(long(timeout_s * 1000));
    std::string& pending = pending_lines()[report_read];
    pending.clear();
    auto drop_fds = [&] {
        for (int fd : pending_fds()[report_read]) ::close(fd);
        pending_fds().erase(report_read);
    };
    auto fail = [&](const std::string& why) {
        ::kill(-relay, SIGKILL);
        ::kill(relay, SIGKILL);
        ::waitpid(relay, nullptr, 0);
        ::close(report_read);
        pending_lines().erase(report_read);
        drop_fds();
        throw std::runtime_error(why);
    };
    // The relay, the init and the body each report once, in whatever order they get to it.
    long long init_pid = 0, user_error = 0, pid_error = 0, net_error = 0, ipc_error = 0,
              cpu_error = 0;
    long long mount_error = 0, body_ns_pid = 0, quota_error = 0;
    bool have_relay = false, have_init = false, have_body = false;
    while (!(have_relay && have_init && have_body)) {
        std::string line;
        if (!read_line(report_read, pending, line, deadline))
            fail(std::string("the confined process did not report its ") +
                 (!have_relay  ? "namespaces"
                  : !have_init ? "init"
                               : "lockdown"));
        if (line.rfind("A ", 0) == 0) {
            have_relay =
                std::sscanf(line.c_str(), "A %lld %lld %lld %lld %lld %lld", &init_pid, &user_error,
                            &pid_error, &net_error, &ipc_error, &cpu_error) == 6;
        } else if (line.rfind("B ", 0) == 0) {
            have_init = std::sscanf(line.c_str(), "B %lld %lld %lld", &mount_error, &body_ns_pid,
                                    &quota_error) == 3;
        } else if (line.rfind("S ", 0) == 0) {
            try {
                p.layers = LayerReport::from_json(json::parse(line.substr(2)));
                have_body = true;
            } catch (const std::exception& e) {
                fail(std::string("unreadable lockdown report: ") + e.what());
            }
        } else {
            fail("the confined process ended before its lockdown was in place (" + line + ")");
        }
    }
    // Each layer the relay and the init applied, from the code they sent: 0 applied, kDisabled
    // off (the spec says why), kNotMade none made for this process (not_made says why; where
    // that is empty the layer is not reported on: cpu_cgroup and disk_quota for processes that
    // were not given one), else an errno or kNoMountNamespace, said by failed(code).
    auto said = [&](const char* layer, long long code, const std::string& not_made,
                    const std::function<std::string(int)>& failed) {
        if (code == kDisabled)
            p.layers.add(layer, false, spec.off_reason(layer));
        else if (code == kNotMade) {
            if (!not_made.empty()) p.layers.add(layer, false, not_made);
        } else
            p.layers.add(layer, code == 0, code == 0 ? "" : failed(int(code)));
    };
    auto in_namespace = [&](int code) { return namespace_reason(code, root); };
    if (!root)  // as root, the body reports its dedicated user
        said("identity", user_error,
             "every namespace is off, so it has no user namespace of its own",
             [](int code) { return "no user namespace: " + namespace_reason(code, false); });
    said("pid_namespace", pid_error, "", in_namespace);
    said("network_namespace", net_error, "", in_namespace);
    said("ipc_namespace", ipc_error, spec.ipc_namespace_off, in_namespace);
    said("mount_namespace", mount_error, "", in_namespace);
    std::vector<int>& folders = pending_fds()[report_read];
    if (quota_error == 0 && folders.size() != spec.writable.size()) quota_error = kNoFolders;
    said("disk_quota", quota_error, "", [](int code) {
        return code == kNoMountNamespace
                   ? "no mount namespace to make its folder a tmpfs in: it writes kbench's "
                     "scratch folder, without a limit"
               : code == kNoFolders ? "the descriptors of its folders did not come"
                                    : "cannot mount a tmpfs over its folder: " + errno_text(code);
    });
    if (quota_error == 0) p.folders = folders;
    if (p.folders.empty())
        for (int fd : folders) ::close(fd);
    pending_fds().erase(report_read);
    said("cpu_cgroup", cpu_error, spec.cpu_cgroup_missing,
         [&](int code) { return "cannot join " + spec.cpu_cgroup + ": " + errno_text(code); });
    // The body's pid as this process sees it: the init's child.
    pid_t init = pid_t(init_pid);
    p.body_pid = pid_t(body_ns_pid);
    if (pid_error == 0) {
        std::ifstream children("/proc/" + std::to_string(init) + "/task/" + std::to_string(init) +
                               "/children");
        long long child = 0;
        p.body_pid = children >> child ? pid_t(child) : -1;
    }
    // What the kernel shows of each layer reported applied.
    check_layers(p.layers, p.body_pid, spec);
    return p;
}

ConfinedEnd wait_confined(ConfinedProcess& p) {
    ConfinedEnd end;
    if (p.pid <= 0) return end;
    while (::waitpid(p.pid, nullptr, 0) < 0 && errno == EINTR) {
    }
    p.pid = -1;
    std::string& pending = pending_lines()[p.report_fd];
    std::string line;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    while (read_line(p.report_fd, pending, line, deadline)) {
        if (line.rfind("E ", 0) != 0) continue;
        std::istringstream in(line.substr(2));
        int known = 0;
        in >> known >> end.wait_status;
        end.body_status_known = known == 1;
        for (std::string name; in >> name;) end.leftovers.push_back(name);
        break;
    }
    ::close(p.report_fd);
    pending_lines().erase(p.report_fd);
    for (int fd : pending_fds()[p.report_fd]) ::close(fd);
    pending_fds().erase(p.report_fd);
    p.report_fd = -1;
    return end;
}

// Real-time signals: each one sent is queued, so the candidate's own (ignored) cannot hide
// kbench's; the freeze's number is the lower, so a pending freeze is handled before a thaw.
int freeze_signal() {
    return SIGRTMIN + 4;
}
int thaw_signal() {
    return SIGRTMIN + 5;
}

void make_undumpable() {
    ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
}

bool readable_by(const std::string& path, std::int64_t uid, std::int64_t gid) {
    std::string walked;
    std::stringstream parts(path);
    std::vector<std::string> prefixes = {"/"};
    for (std::string part; std::getline(parts, part, '/');) {
        if (part.empty()) continue;
        walked += "/" + part;
        prefixes.push_back(walked);
    }
    for (std::size_t i = 0; i < prefixes.size(); ++i) {
        struct stat st {};
        if (::stat(prefixes[i].c_str(), &st) != 0) return false;
        bool last = i + 1 == prefixes.size();
        mode_t need = S_ISDIR(st.st_mode) ? (last ? 05 : 01) : 04;
        mode_t granted = st.st_uid == uid_t(uid)   ? (st.st_mode >> 6) & 07
                         : st.st_gid == gid_t(gid) ? (st.st_mode >> 3) & 07
                                                   : st.st_mode & 07;
        if ((granted & need) != need) return false;
    }
    return true;
}

}  // namespace kbench::sandbox
