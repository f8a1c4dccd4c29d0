#include "runtime/signals.hpp"

#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstdlib>
#include <string>

#include "process/proc_parent.hpp"
#include "protocol/fault.hpp"

namespace kbench::worker {
namespace {

constexpr std::array kWatched = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGCONT};
constexpr std::size_t kCapacity = 64;
constexpr std::size_t kRoots = 64;

std::array<std::atomic<int>, kCapacity> numbers{};
std::array<std::atomic<pid_t>, kCapacity> senders{};
std::array<std::atomic<pid_t>, kCapacity> roots{};
std::atomic<std::size_t> written{0};
std::size_t read_upto = 0;
std::array<std::atomic<pid_t>, kRoots> watched{};

using sandbox::parent_of;

pid_t watched_ancestor(pid_t pid) {
    for (int depth = 0; depth < 256 && pid > 1; ++depth) {
        for (const auto& root : watched)
            if (root.load() == pid) return pid;
        pid = parent_of(pid);
    }
    return 0;
}

void record(int number, siginfo_t* info, void*) {
    int saved = errno;
    pid_t sender = info ? info->si_pid : 0;
    std::size_t slot = written.fetch_add(1) % kCapacity;
    senders[slot].store(sender);
    roots[slot].store(sender > 0 ? watched_ancestor(sender) : 0);
    numbers[slot].store(number);
    errno = saved;
}

bool terminates(int number) {
    return number == SIGTERM || number == SIGINT || number == SIGHUP || number == SIGQUIT;
}

}  // namespace

void watch_signals() {
    for (int number : kWatched) {
        struct sigaction action {};
        action.sa_sigaction = record;
        action.sa_flags = SA_SIGINFO | SA_RESTART;
        sigemptyset(&action.sa_mask);
        sigaction(number, &action, nullptr);
    }
}

void watch_process(pid_t root) {
    for (auto& slot : watched) {
        pid_t empty = 0;
        if (slot.compare_exchange_strong(empty, root)) return;
    }
}

void unwatch_process(pid_t root) {
    for (auto& slot : watched) {
        pid_t expected = root;
        slot.compare_exchange_strong(expected, 0);
    }
}

std::vector<ReceivedSignal> take_signals() {
    std::vector<ReceivedSignal> out;
    std::size_t end = written.load();
    if (end - read_upto > kCapacity) read_upto = end - kCapacity;
    for (; read_upto < end; ++read_upto) {
        std::size_t slot = read_upto % kCapacity;
        out.push_back({numbers[slot].load(), senders[slot].load(), roots[slot].load()});
    }
    return out;
}

const char* signal_name(int number) {
    static thread_local std::string name;
    const char* abbrev = sigabbrev_np(number);
    name = abbrev ? std::string("SIG") + abbrev : "signal " + std::to_string(number);
    return name.c_str();
}

void obey(const ReceivedSignal& s) {
    if (!terminates(s.number)) return;
    ::signal(s.number, SIG_DFL);
    ::raise(s.number);
    std::_Exit(128 + s.number);
}

void check_signals(pid_t sandbox) {
    for (const ReceivedSignal& s : take_signals()) {
        if (sandbox > 0 && s.root == sandbox)
            throw protocol::FaultError(protocol::FaultKind::integrity,
                                       "the candidate's process " + std::to_string(s.sender) +
                                           " sent " + signal_name(s.number) + " to kbench's judge",
                                       "signalled_kbench");
        obey(s);
    }
}

}  // namespace kbench::worker
