#include "orchestrator/run/interruption.hpp"

#include <fcntl.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <iostream>
#include <mutex>
#include <thread>

#include "core/interrupted.hpp"
#include "process/proc_parent.hpp"
#include "process/process.hpp"

namespace kbench::orchestrator {
namespace {

constexpr std::size_t kSlots = 32;
constexpr std::size_t kDepth = 24;  // ancestors kept for attribution
constexpr int kWalkLimit = 4096;    // a chain longer than this is not verified

enum class Sender { outside, ours, unknown };

struct Slot {
    std::atomic<bool> full{false};
    int signal = 0;
    pid_t sender = 0;
    Sender kind = Sender::unknown;
    double at_s = 0;
    std::array<pid_t, kDepth> ancestry{};
};

std::array<Slot, kSlots> slots;
std::atomic<std::size_t> next_slot{0};
std::atomic<bool> interrupting{false};
std::atomic<bool> active{false};
std::atomic<bool> was_stopped{false};  // a SIGCONT came: someone stopped kbench meanwhile
// The interruption being handled: its signal, its sender (by the kernel's word) and when it came,
// so that the same sender's repeat of it (coreutils' timeout signals kbench and then its process
// group) is not taken for a second interruption.
std::atomic<int> first_signal{0};
std::atomic<pid_t> first_sender{0};
std::atomic<long long> first_at_ms{0};
int wake_pipe[2] = {-1, -1};
std::mutex hostile_mutex;
std::vector<HostileSignal> hostile;

double monotonic_s() {
    timespec t{};
    ::clock_gettime(CLOCK_MONOTONIC, &t);
    return double(t.tv_sec) + double(t.tv_nsec) / 1e9;
}

// Whether pid is one of kbench's own ancestors, alive now. Such a process held its pid since
// before kbench began, so no process under kbench ever had that pid: a signal that names it came
// from it, whatever happened since (kbench stopped and continued, as coreutils' timeout does).
bool is_own_ancestor(pid_t pid) {
    if (pid <= 0) return false;
    pid_t p = ::getppid();
    for (int depth = 0; depth < kWalkLimit && p > 0; ++depth) {
        if (p == pid) return true;
        if (p == 1) return false;
        p = sandbox::parent_of(p);
    }
    return false;
}

// Where a signal came from, read in the handler (system calls only). The kernel vouches for the
// sender of SI_USER (kill) and SI_TKILL (tgkill); a terminal's signals are SI_KERNEL. Queued
// signals (SI_QUEUE) carry whatever pid their sender wrote, and SIGIO-style signals none.
void classify(Slot& slot, const siginfo_t* info, pid_t self) {
    slot.kind = Sender::unknown;
    slot.sender = 0;
    if (!info) return;
    if (info->si_code == SI_KERNEL) {
        slot.kind = Sender::outside;
        return;
    }
    // A queued signal's pid is its sender's word, and SIGIO-style signals name none: unknown,
    // never attributed (a forged pid could point at another candidate's workers).
    if (info->si_code != SI_USER && info->si_code != SI_TKILL) return;
    pid_t p = info->si_pid;
    slot.sender = p;
    if (p <= 0 || p == self) return;
    std::size_t kept = 0;
    for (int depth = 0; depth < kWalkLimit; ++depth) {
        pid_t parent = sandbox::parent_of(p);
        if (parent == self) {
            slot.kind = Sender::ours;
            return;
        }
        if (parent == 0) {
            // Gone before kbench could look (or pid 1 itself): no proof either way.
            if (p == 1) slot.kind = Sender::outside;
            return;
        }
        if (kept < kDepth) slot.ancestry[kept++] = parent;
        if (parent == 1) {
            slot.kind = Sender::outside;
            return;
        }
        p = parent;
    }
}

void on_signal(int number, siginfo_t* info, void*) {
    int saved = errno;
    if (number == SIGCONT) {
        was_stopped.store(true);
        errno = saved;
        return;
    }
    std::size_t index = next_slot.fetch_add(1) % kSlots;
    Slot& slot = slots[index];
    slot.signal = number;
    slot.ancestry.fill(0);
    slot.at_s = monotonic_s();
    classify(slot, info, ::getpid());
    // A second interruption while the first is handled: end now. The same signal again from the
    // same sender within a second is the first one's repeat, not a second.
    long long now_ms = (long long)(slot.at_s * 1000);
    if (slot.kind != Sender::ours && interrupting.load()) {
        bool repeat = slot.sender > 0 && slot.sender == first_sender.load() &&
                      number == first_signal.load() && now_ms - first_at_ms.load() < 1000;
        if (repeat) {
            errno = saved;
            return;
        }
        ::_exit(128 + number);
    }
    if (slot.kind != Sender::ours && first_signal.load() == 0) {
        first_sender.store(slot.sender);
        first_at_ms.store(now_ms);
        first_signal.store(number);
    }
    slot.full.store(true);
    char byte = 1;
    ssize_t ignored = ::write(wake_pipe[1], &byte, 1);
    (void)ignored;
    errno = saved;
}

}  // namespace

double InterruptGuard::now_s() {
    return monotonic_s();
}

InterruptGuard::InterruptGuard(Handler on_interrupt) {
    if (active.exchange(true)) return;  // one guard a process
    if (wake_pipe[0] < 0 && ::pipe2(wake_pipe, O_CLOEXEC) != 0) return;
    was_stopped.store(false);
    std::thread([handler = std::move(on_interrupt)] {
        for (;;) {
            char byte;
            ssize_t n = ::read(wake_pipe[0], &byte, 1);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) return;
            for (Slot& slot : slots) {
                if (!slot.full.exchange(false)) continue;
                if (slot.kind == Sender::ours) {
                    HostileSignal h{slot.signal, slot.sender, {}, slot.at_s};
                    for (pid_t p : slot.ancestry)
                        if (p > 0) h.ancestry.push_back(p);
                    std::lock_guard<std::mutex> guard(hostile_mutex);
                    hostile.push_back(std::move(h));
                    continue;
                }
                if (!active.load() || interrupting.exchange(true)) continue;
                mark_interrupted();
                int signal = slot.signal;
                Origin origin = (slot.kind == Sender::outside && !was_stopped.load()) ||
                                        is_own_ancestor(slot.sender)
                                    ? Origin::outside
                                    : Origin::unverified;
                sandbox::kill_every_child();
                if (handler) {
                    try {
                        handler(signal, origin);
                    } catch (const std::exception& e) {
                        std::cerr << "kbench: while stopping: " << e.what() << "\n";
                    }
                }
                sandbox::kill_every_child();
                std::cout.flush();
                std::cerr.flush();
                ::_exit(128 + signal);
            }
        }
    }).detach();
    for (int number : {SIGINT, SIGTERM, SIGHUP, SIGCONT}) {
        struct sigaction action {};
        action.sa_sigaction = on_signal;
        action.sa_flags = SA_SIGINFO | SA_RESTART;
        sigemptyset(&action.sa_mask);
        ::sigaction(number, &action, nullptr);
    }
}

InterruptGuard::~InterruptGuard() {
    if (interrupting.load()) return;
    for (int number : {SIGINT, SIGTERM, SIGHUP, SIGCONT}) ::signal(number, SIG_DFL);
    active.store(false);
}

bool InterruptGuard::interrupted() {
    return interrupting.load();
}

std::vector<HostileSignal> InterruptGuard::take_hostile(const std::vector<pid_t>& roots,
                                                        double since_s) {
    std::lock_guard<std::mutex> guard(hostile_mutex);
    std::vector<HostileSignal> out;
    auto from_roots = [&](const HostileSignal& h) {
        for (pid_t root : roots)
            if (root > 0 && (h.sender == root || std::find(h.ancestry.begin(), h.ancestry.end(),
                                                           root) != h.ancestry.end()))
                return true;
        return false;
    };
    for (auto it = hostile.begin(); it != hostile.end();) {
        if (!from_roots(*it)) {
            ++it;
            continue;
        }
        if (it->at_s >= since_s) out.push_back(*it);  // older: a candidate judged before
        it = hostile.erase(it);
    }
    return out;
}

std::vector<HostileSignal> InterruptGuard::take_all_hostile() {
    std::lock_guard<std::mutex> guard(hostile_mutex);
    std::vector<HostileSignal> out;
    out.swap(hostile);
    return out;
}

}  // namespace kbench::orchestrator
