#pragma once

#include <sys/types.h>

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

#include "judge/phase_clock.hpp"
#include "judge/sandbox_cpu.hpp"

namespace kbench::worker {

// A sandbox's phase clock (phase_clock.hpp) that also charges the CPU time the sandbox's
// processes use while it stands still. The judge's own work between requests is not the
// sandbox's time, but a candidate that works meanwhile (starving the judge of the CPU) spends
// its own: its CPU seconds come off what the phase has left. A thread looks every 100 ms while
// the clock stands still; once that use passes what the phase had left, it ends the sandbox's
// processes, and the overrun is the candidate's.
class SandboxClock {
  public:
    using Clock = PhaseClock::Clock;
    explicit SandboxClock(pid_t sandbox);
    ~SandboxClock();
    SandboxClock(const SandboxClock&) = delete;
    SandboxClock& operator=(const SandboxClock&) = delete;

    void start(double seconds);
    void run();
    void stop(Clock::time_point at = Clock::now());
    Clock::time_point deadline() const;
    // Why the sandbox's processes were ended (empty: they were not).
    std::string ended_why() const;
    // The CPU seconds charged since the last start().
    double charged_s() const;

  private:
    void watch();

    pid_t sandbox_;
    mutable std::mutex mutex_;
    std::condition_variable wake_;
    PhaseClock clock_;
    SandboxCpu cpu_;
    double cpu_at_stop_ = 0;
    std::uint64_t stops_ = 0;  // how many times it stood still
    double charged_s_ = 0;
    std::string ended_why_;
    bool done_ = false;
    std::thread watcher_;
};

}  // namespace kbench::worker
