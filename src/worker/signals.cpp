#include "worker/signals.hpp"

#include <signal.h>
#include <string.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstdlib>
#include <fstream>
#include <string>

#include "protocol/fault.hpp"

namespace kbench::worker {
namespace {

constexpr std::array kWatched = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGCONT};
constexpr std::size_t kCapacity = 64;

std::array<std::atomic<int>, kCapacity> numbers{};
std::array<std::atomic<pid_t>, kCapacity> senders{};
std::atomic<std::size_t> written{0};
std::size_t read_upto = 0;

void record(int number, siginfo_t* info, void*) {
    std::size_t slot = written.fetch_add(1) % kCapacity;
    senders[slot].store(info ? info->si_pid : 0);
    numbers[slot].store(number);
}

pid_t parent_of(pid_t pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
    std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    auto close = stat.rfind(')');
    if (close == std::string::npos || close + 4 > stat.size()) return 0;
    return pid_t(std::atol(stat.c_str() + close + 4));
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

std::vector<ReceivedSignal> take_signals() {
    std::vector<ReceivedSignal> out;
    std::size_t end = written.load();
    if (end - read_upto > kCapacity) read_upto = end - kCapacity;
    for (; read_upto < end; ++read_upto) {
        std::size_t slot = read_upto % kCapacity;
        out.push_back({numbers[slot].load(), senders[slot].load()});
    }
    return out;
}

bool in_process_tree(pid_t pid, pid_t ancestor) {
    for (int depth = 0; depth < 4096 && pid > 1; ++depth) {
        if (pid == ancestor) return true;
        pid = parent_of(pid);
    }
    return false;
}

void check_signals(pid_t sandbox) {
    for (const ReceivedSignal& s : take_signals()) {
        const char* name = sigabbrev_np(s.number);
        std::string signal = std::string("SIG") + (name ? name : std::to_string(s.number).c_str());
        if (sandbox > 0 && s.sender > 0 && in_process_tree(s.sender, sandbox))
            throw protocol::FaultError(protocol::FaultKind::integrity,
                                       "the candidate's process " + std::to_string(s.sender) +
                                           " sent " + signal + " to kbench's judge",
                                       "signalled_kbench");
        if (terminates(s.number)) {
            ::signal(s.number, SIG_DFL);
            ::raise(s.number);
            std::_Exit(128 + s.number);
        }
    }
}

}  // namespace kbench::worker
