#include "judge/sandbox_clock.hpp"

#include <signal.h>

#include <cstdio>

#include "process/process_tree.hpp"

namespace kbench::worker {

SandboxClock::SandboxClock(pid_t sandbox)
    : sandbox_(sandbox), cpu_(sandbox), watcher_([this] { watch(); }) {}

SandboxClock::~SandboxClock() {
    {
        std::lock_guard<std::mutex> hold(mutex_);
        done_ = true;
    }
    wake_.notify_all();
    watcher_.join();
}

void SandboxClock::start(double seconds) {
    std::lock_guard<std::mutex> hold(mutex_);
    clock_.start(seconds);
    cpu_at_stop_ = cpu_.seconds();
    ++stops_;
    charged_s_ = 0;
    wake_.notify_all();
}

void SandboxClock::run() {
    std::lock_guard<std::mutex> hold(mutex_);
    if (clock_.running()) return;
    double used = cpu_.seconds() - cpu_at_stop_;
    clock_.run();
    clock_.charge(used);
    if (used > 0) charged_s_ += used;
}

void SandboxClock::stop(Clock::time_point at) {
    std::lock_guard<std::mutex> hold(mutex_);
    if (!clock_.running() || !clock_.limited()) return;
    clock_.stop(at);
    cpu_at_stop_ = cpu_.seconds();
    ++stops_;
}

SandboxClock::Clock::time_point SandboxClock::deadline() const {
    std::lock_guard<std::mutex> hold(mutex_);
    return clock_.deadline();
}

std::string SandboxClock::ended_why() const {
    std::lock_guard<std::mutex> hold(mutex_);
    return ended_why_;
}

double SandboxClock::charged_s() const {
    std::lock_guard<std::mutex> hold(mutex_);
    return charged_s_;
}

void SandboxClock::watch() {
    std::unique_lock<std::mutex> hold(mutex_);
    auto refreshed = Clock::now();
    while (!done_) {
        // Every 100 ms, never woken by a request or a reply: the judge's own path stays as short.
        wake_.wait_for(hold, std::chrono::milliseconds(100));
        if (done_ || clock_.running() || !clock_.limited() || !ended_why_.empty()) continue;
        auto now = Clock::now();
        double left = std::chrono::duration<double>(clock_.deadline(now) - now).count();
        double at_stop = cpu_at_stop_;
        std::uint64_t stop = stops_;
        // Listing the sandbox's processes reads /proc (without a cgroup): once a second, and
        // without the lock the judge's requests take.
        bool refresh = now - refreshed >= std::chrono::seconds(1);
        hold.unlock();
        if (refresh) cpu_.refresh();
        double used = cpu_.seconds() - at_stop;
        hold.lock();
        if (refresh) refreshed = now;
        // A request came and went meanwhile: its stop is the one to count from.
        if (done_ || clock_.running() || stops_ != stop || used <= left) continue;
        char text[300];
        std::snprintf(text, sizeof text,
                      "the candidate's processes used %.2f s of CPU time between its requests, "
                      "while kbench did its own work, past the %.2f s the phase had left",
                      used, std::max(0.0, left));
        ended_why_ = text;
        // Its processes, then itself: the judge gets the CPU back at once.
        for (const auto& [pid, name] : sandbox::descendants_of(sandbox_)) ::kill(pid, SIGKILL);
        ::kill(sandbox_, SIGKILL);
    }
}

}  // namespace kbench::worker
