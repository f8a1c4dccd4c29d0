#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace kbench::sandbox {

struct ExitStatus {
    bool exited = false;  // normal exit with a code; otherwise killed by a signal
    int code = 0;
    int signal = 0;

    static ExitStatus from_wait_status(int status);
    std::string describe() const;  // "exit code 3", "signal 11 (SIGSEGV, segmentation fault)"
};

std::string describe_signal(int signal);

struct SpawnSpec {
    std::vector<std::string> argv;  // argv[0] is looked up in PATH
    std::vector<std::pair<std::string, std::string>> env_set;
    std::vector<std::pair<int, int>> fds;  // {fd in the child, fd in this process}
    bool stdin_null = false;               // stdin from /dev/null rather than inherited
    int stdout_fd = -1;                    // -1: inherit
    int stderr_fd = -1;
    bool new_process_group = true;
    int nice = 0;  // added to the child's niceness
    // SCHED_IDLE and niceness 10 higher (sandbox::give_way_to_others): the child (and what it
    // starts) runs only on CPUs nothing else wants, so that a process of normal priority that
    // wakes up never waits for it.
    bool idle = false;
};

// Starts a process; throws InfraError with the reason when it cannot be executed.
pid_t spawn_process(const SpawnSpec& spec);

ExitStatus wait_process(pid_t pid);
std::optional<ExitStatus> try_wait_process(pid_t pid);

struct CommandOutput {
    ExitStatus status;
    std::string out;
    std::string err;  // capped
};

// Runs a program to completion and collects its output; kills it after timeout_s. Its standard
// input holds `input` (from an anonymous file, so that any size goes without a deadlock).
CommandOutput run_to_completion(const std::vector<std::string>& argv, double timeout_s,
                                const std::string& input = {});

// SIGKILL to the process and to its process group.
void kill_process_tree(pid_t pid);

// kill_process_tree for every process spawn_process started and no wait has reaped (kbench
// interrupted: its workers end with it).
void kill_every_child();

// A pair of connected stream sockets, both close-on-exec.
std::pair<int, int> make_socket_pair();
// A pipe {read, write}, both close-on-exec.
std::pair<int, int> make_pipe();

}  // namespace kbench::sandbox
