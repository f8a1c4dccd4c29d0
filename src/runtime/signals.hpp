#pragma once

#include <sys/types.h>

#include <vector>

namespace kbench::worker {

// Catchable signals that reach a trusted worker are recorded with their sender and, where the
// sender descends from a process being watched (a sandbox), with that process: found in the
// handler itself, from /proc, while the sender still exists. One from a sandbox is the
// candidate's attack; one from anyone else is obeyed (a terminating signal ends the worker as it
// would have).
void watch_signals();

// The processes whose descendants' signals are attributed to them (a sandbox's relay).
void watch_process(pid_t root);
void unwatch_process(pid_t root);

struct ReceivedSignal {
    int number = 0;
    pid_t sender = 0;
    pid_t root = 0;  // the watched process the sender descends from, or 0
};

// The signals received since the last call.
std::vector<ReceivedSignal> take_signals();

// "SIGSTOP" and the like.
const char* signal_name(int number);

// Ends this process, as the signal would have, if it is a terminating one.
void obey(const ReceivedSignal& s);

// Throws an integrity fault if a signal came from sandbox's tree; obeys the others.
void check_signals(pid_t sandbox);

}  // namespace kbench::worker
