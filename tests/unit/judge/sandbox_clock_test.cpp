#include "judge/sandbox_clock.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

namespace kbench::worker {
namespace {

// A child that burns the CPU (spin) or sleeps, until it is killed.
pid_t child(bool spin) {
    pid_t pid = ::fork();
    if (pid == 0) {
        volatile unsigned long n = 0;
        for (;;) {
            if (spin)
                n = n + 1;
            else
                ::pause();
        }
    }
    return pid;
}

// Whether pid ended within seconds, by SIGKILL; reaps it.
bool killed_within(pid_t pid, double seconds) {
    auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (std::chrono::steady_clock::now() < until) {
        int status = 0;
        if (::waitpid(pid, &status, WNOHANG) == pid)
            return WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
}

TEST(SandboxClock, CpuUsedWhileItStandsStillEndsTheSandboxPastWhatWasLeft) {
    pid_t spinner = child(true);
    {
        SandboxClock clock(spinner);
        clock.start(0.3);  // stopped: the judge's own work
        EXPECT_TRUE(killed_within(spinner, 5));
        EXPECT_NE(clock.ended_why().find("used"), std::string::npos) << clock.ended_why();
        EXPECT_NE(clock.ended_why().find("between its requests"), std::string::npos);
    }
}

TEST(SandboxClock, AnIdleSandboxLosesNothingAndOneThatWorksPaysOnItsNextRequest) {
    pid_t sleeper = child(false);
    {
        SandboxClock clock(sleeper);
        clock.start(0.5);
        std::this_thread::sleep_for(std::chrono::milliseconds(800));  // longer than the limit
        auto before = std::chrono::steady_clock::now();
        clock.run();
        double left = std::chrono::duration<double>(clock.deadline() - before).count();
        EXPECT_GT(left, 0.4);
        EXPECT_EQ(clock.ended_why(), "");
        EXPECT_LT(clock.charged_s(), 0.05);
    }
    ::kill(sleeper, SIGKILL);
    EXPECT_TRUE(killed_within(sleeper, 5));

    // Spinning for a while under a generous limit: charged, not ended.
    pid_t spinner = child(true);
    {
        SandboxClock clock(spinner);
        clock.start(30);
        std::this_thread::sleep_for(std::chrono::milliseconds(600));
        clock.run();
        EXPECT_GT(clock.charged_s(), 0.2);
        EXPECT_EQ(clock.ended_why(), "");
        double left =
            std::chrono::duration<double>(clock.deadline() - std::chrono::steady_clock::now())
                .count();
        EXPECT_LT(left, 29.9);
    }
    ::kill(spinner, SIGKILL);
    EXPECT_TRUE(killed_within(spinner, 5));
}

}  // namespace
}  // namespace kbench::worker
