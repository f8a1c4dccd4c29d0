#pragma once

#include <string>

namespace kbench::sandbox {

// Installs a seccomp filter on this process (and all it starts) that refuses, with EPERM: ptrace,
// reading or writing another process's memory (process_vm_*, kcmp, pidfd_getfd), perf events,
// BPF, userfaultfd, kernel keyrings, mounts and new namespaces (unshare, setns, clone with a
// namespace flag), io_uring, module and kexec calls, clock setting, and internet or packet
// sockets (AF_INET, AF_INET6, AF_PACKET). clone3 answers ENOSYS, so libc falls back to clone,
// whose flags the filter can see. Needs no_new_privs set first. Returns an empty string on
// success, else why there is no filter.
std::string apply_seccomp();

// Installs a filter that refuses (EPERM) epoll, timerfd, signalfd, Linux AIO and POSIX timers:
// registrations that persist on a wait queue, and what an interrupt wakes at a time the process
// chose, whose work no process is charged for. Needs no_new_privs set first. Empty on success,
// else why there is none.
std::string refuse_uncharged_wakeups();
// Installs a filter that refuses (EPERM) a new disposition for `signal` (rt_sigaction with an
// action; asking for the current one is allowed): the handler installed before stays. Needs
// no_new_privs set first. Empty on success, else why there is none.
std::string keep_signal_handler(int signal);

}  // namespace kbench::sandbox
