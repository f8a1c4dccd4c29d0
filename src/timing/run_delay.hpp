#pragma once

#include <cstdint>

namespace kbench::timing {

// The time the calling thread has spent runnable but waiting for a CPU, in nanoseconds, as the
// kernel counts it (/proc/thread-self/schedstat); 0 where the kernel does not count it. The
// judge takes its own waiting out of a request's wall time: a machine busy with other work (builds,
// other judges) delays the judge, and that is no part of the candidate's time.
class RunDelay {
  public:
    RunDelay();
    // Another process's main thread (the sandbox's, which serves the protocol), from its
    // schedstat opened now: the kernel's count, which no code in that process can change.
    explicit RunDelay(long pid);
    ~RunDelay();
    RunDelay(const RunDelay&) = delete;
    RunDelay& operator=(const RunDelay&) = delete;

    std::uint64_t now_ns();
    bool available() const { return fd_ >= 0; }

  private:
    int fd_ = -1;
    long tid_ = 0;
    bool own_ = true;  // the calling thread's (else another process's, fixed)
};

// The second field of a schedstat line ("on-cpu-ns run-delay-ns timeslices"), or 0.
std::uint64_t parse_run_delay(const char* text, long length);

}  // namespace kbench::timing
