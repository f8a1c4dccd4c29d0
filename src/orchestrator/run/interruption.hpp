#pragma once

#include <sys/types.h>

#include <functional>
#include <vector>

namespace kbench::orchestrator {

// A SIGINT, SIGTERM or SIGHUP that kbench did not obey because a process under its own workers
// sent it (a candidate's): an attack on the run, charged to the candidate whose workers it came
// from.
struct HostileSignal {
    int signal = 0;
    pid_t sender = 0;
    std::vector<pid_t> ancestry;  // the sender's parents, nearest first, up to kbench
    double at_s = 0;              // when it arrived (steady clock, seconds)
};

// How sure kbench is that an interruption came from outside: a terminal (the kernel sends its
// Ctrl-C), one of kbench's own ancestors (its parent, a shell, `timeout`, a scheduler: even when it
// stopped and continued kbench, as `timeout` does), or a process still alive whose parents lead to
// init without passing kbench. Anything
// else (a sender gone before kbench could look, a queued or fd-owner signal whose sender the
// kernel does not vouch for, kbench stopped and continued meanwhile) still stops the run, but
// the evaluations under way keep their attempts, as after any abnormal end.
enum class Origin { outside, unverified };

// SIGINT, SIGTERM and SIGHUP end kbench cleanly while an InterruptGuard lives: a thread of its
// own sets interrupted(), kills every worker (sandbox::kill_every_child), calls on_interrupt
// (write what is finished, say how to resume) and ends the process with 128 + the signal (130,
// 143, 129). A second signal while that runs ends it at once (the same signal from the same sender
// within a second is a repeat, as `timeout` sends to kbench and then to its group). Signals sent by
// kbench's own descendants are not obeyed: they are kept for take_hostile.
class InterruptGuard {
  public:
    using Handler = std::function<void(int signal, Origin origin)>;
    explicit InterruptGuard(Handler on_interrupt);
    ~InterruptGuard();
    InterruptGuard(const InterruptGuard&) = delete;
    InterruptGuard& operator=(const InterruptGuard&) = delete;

    static bool interrupted();
    // The hostile signals whose ancestry holds one of roots (a device's workers) and that arrived
    // at since_s or later, taken; older ones from those roots are dropped.
    static std::vector<HostileSignal> take_hostile(const std::vector<pid_t>& roots, double since_s);
    // Every hostile signal not taken yet, taken.
    static std::vector<HostileSignal> take_all_hostile();
    // The steady clock take_hostile's since_s is on.
    static double now_s();
};

}  // namespace kbench::orchestrator
