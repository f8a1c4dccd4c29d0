#include "sandbox/cpu_activity.hpp"

#include <dirent.h>
#include <dlfcn.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "confinement/seccomp.hpp"
#include "core/elf_symbols.hpp"

namespace kbench::worker::cpu_activity {
namespace {

constexpr long kPeriodNs = 50'000;             // a sample per 50 us of a thread's CPU time
constexpr std::size_t kMaxSamples = 1u << 16;  // between two reports
constexpr std::size_t kMaxThreads = 256;

// Written by the handler (any thread), read by report() between requests.
std::atomic<bool> in_call{false};
std::atomic<std::size_t> taken{0};
std::atomic<std::uint64_t> dropped{0};
// Signals sent and handled. The signal is a real-time one, which queues: under load a thread that
// waits for a CPU gets each when it runs, none is merged; sent less handled is what its threads
// kept out (blocked), and refused sends (a full queue) count too.
std::atomic<std::uint64_t> sent{0};
std::atomic<std::uint64_t> handled{0};
std::atomic<std::uint64_t> refused{0};

// SIGRTMAX - 3: none of glibc's own, and Python's signal module leaves real-time ones alone.
int sample_signal() {
    return SIGRTMAX - 3;
}

std::uintptr_t pcs[kMaxSamples];

struct State {
    std::mutex mutex;  // the report's and the windows'
    std::string why_not = "samples were not started";
    bool active = false;
    std::uint64_t calls = 0;
    std::uint64_t call_ns = 0;
    std::chrono::steady_clock::time_point began;
    // The sampler thread waits on this while no request samples.
    std::mutex sampler_mutex;
    std::condition_variable wake;
    bool sampling = false;
};

State& state() {
    static State* s = new State;  // never destroyed: a late signal may still arrive
    return *s;
}

std::uintptr_t program_counter(const void* context) {
    const auto* uc = static_cast<const ucontext_t*>(context);
#if defined(__x86_64__)
    return std::uintptr_t(uc->uc_mcontext.gregs[REG_RIP]);
#elif defined(__aarch64__)
    return std::uintptr_t(uc->uc_mcontext.pc);
#else
    (void)uc;
    return 0;
#endif
}

void on_sample(int, siginfo_t*, void* context) {
    handled.fetch_add(1, std::memory_order_relaxed);
    if (!in_call.load(std::memory_order_relaxed)) return;
    std::size_t i = taken.fetch_add(1, std::memory_order_relaxed);
    if (i < kMaxSamples)
        pcs[i] = program_counter(context);
    else
        dropped.fetch_add(1, std::memory_order_relaxed);
}

// The CPU-time clock of one thread of this process (the kernel's encoding, as glibc's
// pthread_getcpuclockid makes it for its own threads).
clockid_t thread_clock(pid_t tid) {
    return clockid_t((~unsigned(tid) << 3) | 6);
}

std::uint64_t cpu_ns(pid_t tid) {
    timespec t{};
    if (::clock_gettime(thread_clock(tid), &t) != 0) return 0;
    return std::uint64_t(t.tv_sec) * 1'000'000'000u + std::uint64_t(t.tv_nsec);
}

// The threads to look at: all of them, or past kMaxThreads a window that moves on at each call,
// so that no thread hides behind the others.
std::vector<pid_t> threads_but(pid_t self, unsigned turn) {
    std::vector<pid_t> all;
    DIR* dir = ::opendir("/proc/self/task");
    if (!dir) return all;
    while (dirent* entry = ::readdir(dir)) {
        if (entry->d_name[0] < '0' || entry->d_name[0] > '9') continue;
        auto tid = pid_t(std::atoi(entry->d_name));
        if (tid != self) all.push_back(tid);
    }
    ::closedir(dir);
    if (all.size() <= kMaxThreads) return all;
    std::sort(all.begin(), all.end());
    std::vector<pid_t> window;
    std::size_t start = std::size_t(turn) * kMaxThreads % all.size();
    for (std::size_t i = 0; i < kMaxThreads; ++i) window.push_back(all[(start + i) % all.size()]);
    return window;
}

// Every period, each thread that ran for half of it since the last look gets the signal: its
// handler takes the program counter. While no thread runs (a call waiting for its first build,
// say), the looks grow apart, up to 64 periods. (POSIX CPU-time timers would do this in the
// kernel, but a sandbox may not create them: seccomp.cpp, event_program.)
void sample_forever() {
    State& s = state();
    ::prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
    auto self = pid_t(::syscall(SYS_gettid));
    pid_t process = ::getpid();
    std::vector<pid_t> threads;
    std::map<pid_t, std::uint64_t> last;
    unsigned idle = 0;
    for (unsigned tick = 0;; ++tick) {
        {
            std::unique_lock<std::mutex> lock(s.sampler_mutex);
            if (!s.sampling) {
                s.wake.wait(lock, [&s] { return s.sampling; });
                tick = 0;
            }
        }
        if (tick % 16 == 0) threads = threads_but(self, tick / 16);
        bool ran = false;
        for (pid_t tid : threads) {
            std::uint64_t now = cpu_ns(tid);
            std::uint64_t& before = last[tid];
            bool busy = now >= before + kPeriodNs / 2 && before != 0;
            if (busy) {
                if (::syscall(SYS_tgkill, process, tid, sample_signal()) == 0)
                    ++sent;
                else if (errno == EAGAIN)
                    ++refused;
            }
            ran = ran || busy;
            before = now;
        }
        idle = ran ? 0 : std::min(idle + 1, 6u);
        timespec period{0, kPeriodNs << idle};
        ::nanosleep(&period, nullptr);
    }
}

// A file's functions by address, read once; empty for a file too large to read at each start
// (libtorch's), whose samples are named by its exported symbols.
constexpr std::uintmax_t kMaxSymbolFile = 64u << 20;

const std::vector<ElfFunction>& functions_of(const char* path) {
    static std::map<std::string, std::vector<ElfFunction>> files;
    auto [it, fresh] = files.try_emplace(path);
    if (!fresh) return it->second;
    std::error_code error;
    if (fs::file_size(path, error) > kMaxSymbolFile || error) return it->second;
    try {
        it->second = elf_functions(path);
    } catch (const std::exception&) {
        return it->second;
    }
    std::erase_if(it->second, [](const ElfFunction& f) { return f.size == 0; });
    std::sort(it->second.begin(), it->second.end(),
              [](const ElfFunction& a, const ElfFunction& b) { return a.address < b.address; });
    return it->second;
}

std::string& folder() {
    static std::string* f = new std::string;
    return *f;
}

// How a report names a file: "./" and its path in the candidate's folder, else its name.
const std::string& file_name(const char* path) {
    static std::map<std::string, std::string> names;
    auto [it, fresh] = names.try_emplace(path);
    if (!fresh) return it->second;
    std::error_code error;
    fs::path real = fs::canonical(path, error);
    const std::string& own = folder();
    std::string text = real.string();
    if (!error && !own.empty() && text.size() > own.size() &&
        text.compare(0, own.size(), own) == 0 && text[own.size()] == '/')
        it->second = "." + text.substr(own.size());
    else
        it->second = fs::path(path).filename().string();
    return it->second;
}

// "function (file)": the function that holds the address (its file's own symbol table, local
// functions included), else the exported symbol before it.
std::string name_of(std::uintptr_t pc) {
    Dl_info info{};
    if (!pc || !::dladdr(reinterpret_cast<void*>(pc), &info) || !info.dli_fname)
        return "? (unknown)";
    const std::string& file = file_name(info.dli_fname);
    std::string function = info.dli_sname ? info.dli_sname : "?";
    const std::vector<ElfFunction>& functions = functions_of(info.dli_fname);
    auto offset = std::uint64_t(pc - std::uintptr_t(info.dli_fbase));
    auto after =
        std::upper_bound(functions.begin(), functions.end(), offset,
                         [](std::uint64_t o, const ElfFunction& f) { return o < f.address; });
    if (after != functions.begin() && offset < std::prev(after)->address + std::prev(after)->size)
        function = std::prev(after)->name;
    return function + " (" + file + ")";
}

}  // namespace

std::string start() {
    State& s = state();
    std::lock_guard<std::mutex> guard(s.mutex);
    if (s.active) return "";
    struct sigaction action {};
    action.sa_sigaction = on_sample;
    action.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&action.sa_mask);
    if (::sigaction(sample_signal(), &action, nullptr) != 0) {
        s.why_not = std::string("the sampling signal's handler could not be installed: ") +
                    std::strerror(errno);
        return s.why_not;
    }
    // Nothing the candidate loads later may take the signal away (ignored, or its own handler
    // that knows when it is sampled); where no filter can be installed (no seccomp), a signal
    // that never arrives still counts (the report's dropped).
    sandbox::keep_signal_handler(sample_signal());
    try {
        std::thread(sample_forever).detach();
    } catch (const std::exception& e) {
        s.why_not = std::string("the sampling thread could not start: ") + e.what();
        return s.why_not;
    }
    s.active = true;
    s.why_not.clear();
    return "";
}

void own_folder(const std::string& path) {
    std::error_code error;
    fs::path real = fs::canonical(path, error);
    folder() = error ? std::string() : real.string();
}

void sample(bool on) {
    State& s = state();
    {
        std::lock_guard<std::mutex> guard(s.sampler_mutex);
        s.sampling = on && s.active;
    }
    s.wake.notify_one();
}

void call_begin() {
    State& s = state();
    s.began = std::chrono::steady_clock::now();
    in_call.store(true);
}

void call_end() {
    in_call.store(false);
    State& s = state();
    ++s.calls;
    s.call_ns += std::uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now() - s.began)
                                   .count());
}

protocol::KernelsReported report() {
    State& s = state();
    protocol::KernelsReported out;
    out.source = "cpu";
    std::lock_guard<std::mutex> guard(s.mutex);
    out.collected = s.active;
    out.why = s.why_not;
    if (!s.active) return out;
    in_call.store(false);
    std::size_t n = std::min(taken.exchange(0), kMaxSamples);
    // Beyond the buffer, sent and not handled, or refused.
    std::uint64_t s_count = sent.exchange(0), h_count = handled.exchange(0);
    out.dropped =
        dropped.exchange(0) + (s_count > h_count ? s_count - h_count : 0) + refused.exchange(0);
    out.calls = s.calls;
    out.call_ns = s.call_ns;
    s.calls = 0;
    s.call_ns = 0;
    // By function: the nearest symbol before the address, and the file it lies in.
    std::map<std::string, std::uint64_t> counts;
    std::map<std::uintptr_t, std::string> names;
    for (std::size_t i = 0; i < n; ++i) {
        auto [it, fresh] = names.try_emplace(pcs[i]);
        if (fresh) it->second = name_of(pcs[i]);
        ++counts[it->second];
    }
    for (const auto& [name, count] : counts)
        out.rows.push_back({name, 0, "call", count, count * std::uint64_t(kPeriodNs)});
    return out;
}

}  // namespace kbench::worker::cpu_activity
