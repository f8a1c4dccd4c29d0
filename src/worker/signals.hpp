#pragma once

#include <sys/types.h>

#include <vector>

namespace kbench::worker {

// Catchable signals that reach a trusted worker are recorded with their sender, so that one sent
// from a sandbox's processes is named as the candidate's attack, and one from anyone else is
// obeyed (a terminating signal ends the worker as it would have).
void watch_signals();

struct ReceivedSignal {
    int number = 0;
    pid_t sender = 0;
};

// The signals received since the last call.
std::vector<ReceivedSignal> take_signals();

// Whether pid is ancestor or one of its descendants (by /proc's parent links).
bool in_process_tree(pid_t pid, pid_t ancestor);

// Throws an integrity fault if a signal came from sandbox's tree; ends this process, as the
// signal would have, if a terminating one came from elsewhere; ignores the rest.
void check_signals(pid_t sandbox);

}  // namespace kbench::worker
