#include "process/process.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <thread>

#include "core/error.hpp"
#include "process/channel.hpp"

namespace kbench::sandbox {

TEST(Process, ExitCodeAndSignalAreReported) {
    pid_t ok = spawn_process({{"sh", "-c", "exit 3"}});
    ExitStatus s = wait_process(ok);
    EXPECT_TRUE(s.exited);
    EXPECT_EQ(s.code, 3);
    EXPECT_EQ(s.describe(), "exit code 3");

    pid_t seg = spawn_process({{"sh", "-c", "kill -SEGV $$"}});
    ExitStatus t = wait_process(seg);
    EXPECT_FALSE(t.exited);
    EXPECT_EQ(t.signal, SIGSEGV);
    EXPECT_NE(t.describe().find("SIGSEGV"), std::string::npos);
}

TEST(Process, AnIdleChildAndWhatItStartsRunUnderSchedIdle) {
    // Field 41 of /proc/PID/stat is the scheduling policy (SCHED_IDLE is 5); the command's name
    // holds no space, so cut counts the fields right. The shell's child inherits the policy.
    SpawnSpec spec{{"sh", "-c", "test \"$(cut -d' ' -f41 /proc/self/stat)\" = 5"}};
    spec.idle = true;
    EXPECT_EQ(wait_process(spawn_process(spec)).code, 0);
    spec.idle = false;
    EXPECT_EQ(wait_process(spawn_process(spec)).code, 1);
}

TEST(Process, MissingProgramIsAnInfraErrorThatSaysWhat) {
    try {
        spawn_process({{"/nonexistent/python3"}});
        FAIL() << "expected an error";
    } catch (const InfraError& e) {
        EXPECT_NE(std::string(e.what()).find("/nonexistent/python3"), std::string::npos);
        EXPECT_FALSE(e.hint().empty());
    }
}

TEST(Channel, MessagesOutputAndDeadlines) {
    auto [ours, theirs] = make_socket_pair();
    auto [out_read, out_write] = make_pipe();
    // The child writes output, sends one frame by hand, then hangs.
    std::string frame = encode_frame({{"ok", true}});
    std::string script = "printf 'hello from child'; printf '";
    for (unsigned char c : frame) {
        char buf[8];
        std::snprintf(buf, sizeof(buf), "\\%03o", c);
        script += buf;
    }
    script += "' >&3; sleep 30";
    SpawnSpec spec{{"sh", "-c", script}};
    spec.fds = {{3, theirs}};
    spec.stdout_fd = out_write;
    pid_t pid = spawn_process(spec);
    ::close(theirs);
    ::close(out_write);
    Channel channel(ours, out_read);
    auto first = channel.receive(Clock::now() + std::chrono::seconds(10));
    ASSERT_EQ(first.event, Channel::Event::message);
    EXPECT_EQ(first.body["ok"], true);
    auto start = Clock::now();
    auto second = channel.receive(Clock::now() + std::chrono::milliseconds(300));
    EXPECT_EQ(second.event, Channel::Event::timed_out);
    EXPECT_LT(Clock::now() - start, std::chrono::seconds(5));
    kill_process_tree(pid);
    wait_process(pid);
    auto third = channel.receive(Clock::now() + std::chrono::seconds(5));
    EXPECT_EQ(third.event, Channel::Event::closed);
    channel.drain_output(std::chrono::milliseconds(500));
    EXPECT_EQ(channel.output().text(), "hello from child");
}

TEST(Channel, GarbageFromThePeerIsAClosedChannel) {
    auto [ours, theirs] = make_socket_pair();
    Channel channel(ours, -1);
    std::string garbage = std::string("\x05\x00\x00\x00", 4) + "nope!";
    ASSERT_EQ(::write(theirs, garbage.data(), garbage.size()), ssize_t(garbage.size()));
    auto reply = channel.receive(Clock::now() + std::chrono::seconds(5));
    EXPECT_EQ(reply.event, Channel::Event::closed);
    EXPECT_NE(channel.protocol_error().find("JSON"), std::string::npos);
    ::close(theirs);
}

}  // namespace kbench::sandbox

namespace kbench::sandbox {

TEST(Process, WaitingNeedsARealProcessId) {
    // waitpid(-1) would wait for any child at all; the helpers refuse it.
    EXPECT_THROW(wait_process(-1), std::invalid_argument);
    EXPECT_THROW(try_wait_process(0), std::invalid_argument);
}

}  // namespace kbench::sandbox

namespace kbench::sandbox {

TEST(Process, ChildrenOutliveTheThreadThatStartedThem) {
    // The parent-death signal belongs to the forking thread; a child started from a short-lived
    // thread must not die when that thread ends.
    pid_t child = -1;
    std::thread([&] { child = spawn_process({{"sleep", "5"}}); }).join();
    ::usleep(300000);
    EXPECT_FALSE(try_wait_process(child).has_value()) << "the child died with its thread";
    kill_process_tree(child);
    wait_process(child);
}

}  // namespace kbench::sandbox
