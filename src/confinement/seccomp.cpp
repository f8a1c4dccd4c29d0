#include "confinement/seccomp.hpp"

#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

namespace kbench::sandbox {
namespace {

// AUDIT_ARCH_X86_64 and AUDIT_ARCH_AARCH64, written out: some headers define them through
// others that are not always included.
#if defined(__x86_64__)
constexpr std::uint32_t kArch = 0xC000003Eu;
#elif defined(__aarch64__)
constexpr std::uint32_t kArch = 0xC00000B7u;
#else
constexpr std::uint32_t kArch = 0;
#endif

// Syscalls refused outright. Each exists on the architectures above unless guarded.
const std::vector<long>& refused() {
    static const std::vector<long> calls = {
        SYS_ptrace,
        SYS_process_vm_readv,
        SYS_process_vm_writev,
        SYS_kcmp,
        SYS_perf_event_open,
        SYS_bpf,
        SYS_userfaultfd,
        SYS_keyctl,
        SYS_add_key,
        SYS_request_key,
        SYS_mount,
        SYS_umount2,
        SYS_pivot_root,
        SYS_chroot,
        SYS_setns,
        SYS_unshare,
        SYS_open_by_handle_at,
        SYS_kexec_load,
        SYS_init_module,
        SYS_finit_module,
        SYS_delete_module,
        SYS_reboot,
        SYS_swapon,
        SYS_swapoff,
        SYS_acct,
        SYS_settimeofday,
        SYS_clock_settime,
        SYS_clock_adjtime,
        SYS_adjtimex,
        SYS_syslog,
        // On GPUs kbench pins both sandboxes to one core while a candidate is timed (the same
        // CPU path for the candidate and the baseline), the candidate's under SCHED_IDLE: a
        // candidate may neither move itself off that core nor raise its own priority there.
        SYS_sched_setaffinity,
        SYS_sched_setscheduler,
        SYS_sched_setattr,
        SYS_vhangup,
        SYS_quotactl,
#ifdef SYS_pidfd_getfd
        SYS_pidfd_getfd,
#endif
#ifdef SYS_io_uring_setup
        SYS_io_uring_setup,
        SYS_io_uring_enter,
        SYS_io_uring_register,
#endif
#ifdef SYS_kexec_file_load
        SYS_kexec_file_load,
#endif
#ifdef SYS_move_mount
        SYS_move_mount,
        SYS_open_tree,
        SYS_fsopen,
        SYS_fsconfig,
        SYS_fsmount,
        SYS_fspick,
#endif
#ifdef SYS_mount_setattr
        SYS_mount_setattr,
#endif
#ifdef SYS_iopl
        SYS_iopl,
        SYS_ioperm,
#endif
    };
    return calls;
}

constexpr std::uint32_t kNamespaceFlags = CLONE_NEWNS | CLONE_NEWUSER | CLONE_NEWPID |
                                          CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS |
                                          CLONE_NEWCGROUP;

sock_filter bpf_statement(std::uint16_t code, std::uint32_t k) {
    return BPF_STMT(code, k);
}

sock_filter bpf_jump(std::uint16_t code, std::uint32_t k, std::uint8_t jt, std::uint8_t jf) {
    return BPF_JUMP(code, k, jt, jf);
}

constexpr std::uint32_t kAllow = SECCOMP_RET_ALLOW;
constexpr std::uint32_t kEperm = SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA);
constexpr std::uint32_t kEnosys = SECCOMP_RET_ERRNO | (ENOSYS & SECCOMP_RET_DATA);

// The start of a filter: another architecture kills the process, x32 numbers and calls are
// refused (EPERM), and the call's number is left loaded for what follows.
std::vector<sock_filter> refusing(const std::vector<long>& calls) {
    std::vector<sock_filter> p;
    p.push_back(bpf_statement(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)));
    p.push_back(bpf_jump(BPF_JMP | BPF_JEQ | BPF_K, kArch, 1, 0));
    p.push_back(bpf_statement(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS));
    p.push_back(bpf_statement(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)));
#if defined(__x86_64__)
    // x32 numbers (bit 30 set) would name the same calls under numbers the list lacks.
    p.push_back(bpf_jump(BPF_JMP | BPF_JGE | BPF_K, 0x40000000u, 0, 1));
    p.push_back(bpf_statement(BPF_RET | BPF_K, kEperm));
#endif
    for (long call : calls) {
        p.push_back(bpf_jump(BPF_JMP | BPF_JEQ | BPF_K, std::uint32_t(call), 0, 1));
        p.push_back(bpf_statement(BPF_RET | BPF_K, kEperm));
    }
    return p;
}

std::vector<sock_filter> program() {
    const std::uint32_t arg0 = offsetof(seccomp_data, args[0]);  // low half on little-endian
    std::vector<sock_filter> p = refusing(refused());
    // mremap with an old size of 0 makes a second mapping of the same shared pages: a
    // candidate's output over kbench's buffer at an address kbench does not know. Refused.
    const std::uint32_t arg1 = offsetof(seccomp_data, args[1]);
    p.push_back(bpf_jump(BPF_JMP | BPF_JEQ | BPF_K, SYS_mremap, 0, 6));
    p.push_back(bpf_statement(BPF_LD | BPF_W | BPF_ABS, arg1));
    p.push_back(bpf_jump(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 3));
    p.push_back(bpf_statement(BPF_LD | BPF_W | BPF_ABS, arg1 + 4));
    p.push_back(bpf_jump(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 1));
    p.push_back(bpf_statement(BPF_RET | BPF_K, kEperm));
    p.push_back(bpf_statement(BPF_RET | BPF_K, kAllow));
#ifdef SYS_clone3
    p.push_back(bpf_jump(BPF_JMP | BPF_JEQ | BPF_K, SYS_clone3, 0, 1));
    p.push_back(bpf_statement(BPF_RET | BPF_K, kEnosys));
#endif
    // clone: refused when it asks for a new namespace.
    p.push_back(bpf_jump(BPF_JMP | BPF_JEQ | BPF_K, SYS_clone, 0, 4));
    p.push_back(bpf_statement(BPF_LD | BPF_W | BPF_ABS, arg0));
    p.push_back(bpf_jump(BPF_JMP | BPF_JSET | BPF_K, kNamespaceFlags, 0, 1));
    p.push_back(bpf_statement(BPF_RET | BPF_K, kEperm));
    p.push_back(bpf_statement(BPF_RET | BPF_K, kAllow));
    // socket and socketpair: refused for internet and packet families.
    p.push_back(bpf_jump(BPF_JMP | BPF_JEQ | BPF_K, SYS_socket, 1, 0));
    p.push_back(bpf_jump(BPF_JMP | BPF_JEQ | BPF_K, SYS_socketpair, 0, 5));
    p.push_back(bpf_statement(BPF_LD | BPF_W | BPF_ABS, arg0));
    p.push_back(bpf_jump(BPF_JMP | BPF_JEQ | BPF_K, AF_INET, 2, 0));
    p.push_back(bpf_jump(BPF_JMP | BPF_JEQ | BPF_K, AF_INET6, 1, 0));
    p.push_back(bpf_jump(BPF_JMP | BPF_JEQ | BPF_K, AF_PACKET, 0, 1));
    p.push_back(bpf_statement(BPF_RET | BPF_K, kEperm));
    p.push_back(bpf_statement(BPF_RET | BPF_K, kAllow));
    return p;
}

// A second filter, stacked on the first, against work the kernel does for a process without
// charging it. A wait queue's wake-up runs a callback for every registration on it, and
// registrations that never wake their waiter cost the waiter nothing: epoll's persist, and so do
// poll's and select's whose events never match (a thread blocked in poll on one descriptor
// listed 1024 times with no events). Woken from an interrupt at a time the process chose, that
// walk is charged to whatever runs on that core (on GPUs, the timing core, where the baseline
// runs too). Refused (EPERM): epoll, and what an interrupt wakes at a chosen time: timerfd,
// signalfd (the signals of timers), Linux AIO (its completions signal an eventfd), POSIX timers
// (before Linux 6.13 a periodic one whose signal is ignored is re-armed in the interrupt at every
// tick, forever: work with no waiter at all).
std::vector<sock_filter> event_program() {
    std::vector<long> calls = {
#ifdef SYS_epoll_create
        SYS_epoll_create,
#endif
#ifdef SYS_signalfd
        SYS_signalfd,
#endif
        SYS_epoll_create1, SYS_timerfd_create, SYS_signalfd4, SYS_io_setup, SYS_timer_create};
    std::vector<sock_filter> p = refusing(calls);
    p.push_back(bpf_statement(BPF_RET | BPF_K, kAllow));
    return p;
}

std::string install(std::vector<sock_filter> filter) {
    if (kArch == 0) return "kbench's seccomp filters are written for x86-64 and aarch64 only";
    sock_fprog prog{static_cast<unsigned short>(filter.size()), filter.data()};
    if (::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) != 0)
        return std::string("the kernel refused the seccomp filter: ") + std::strerror(errno);
    return {};
}

}  // namespace

std::string apply_seccomp() {
    return install(program());
}

std::string refuse_uncharged_wakeups() {
    return install(event_program());
}

std::string keep_signal_handler(int signal) {
    const std::uint32_t arg0 = offsetof(seccomp_data, args[0]);
    const std::uint32_t arg1 = offsetof(seccomp_data, args[1]);
    std::vector<sock_filter> p = refusing({});
    // rt_sigaction(signal, act, ...) with act not null: refused; asking what it is, allowed.
    p.push_back(bpf_jump(BPF_JMP | BPF_JEQ | BPF_K, SYS_rt_sigaction, 0, 7));
    p.push_back(bpf_statement(BPF_LD | BPF_W | BPF_ABS, arg0));
    p.push_back(bpf_jump(BPF_JMP | BPF_JEQ | BPF_K, std::uint32_t(signal), 0, 5));
    p.push_back(bpf_statement(BPF_LD | BPF_W | BPF_ABS, arg1));
    p.push_back(bpf_jump(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 2));
    p.push_back(bpf_statement(BPF_LD | BPF_W | BPF_ABS, arg1 + 4));
    p.push_back(bpf_jump(BPF_JMP | BPF_JEQ | BPF_K, 0, 1, 0));
    p.push_back(bpf_statement(BPF_RET | BPF_K, kEperm));
    p.push_back(bpf_statement(BPF_RET | BPF_K, kAllow));
    return install(p);
}

}  // namespace kbench::sandbox
