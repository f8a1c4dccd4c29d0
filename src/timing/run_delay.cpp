#include "timing/run_delay.hpp"

#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <string>

namespace kbench::timing {
namespace {

int open_own_schedstat(long tid) {
    std::string path = "/proc/self/task/" + std::to_string(tid) + "/schedstat";
    return ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
}

}  // namespace

std::uint64_t parse_run_delay(const char* text, long length) {
    long at = 0;
    auto skip_spaces = [&] {
        while (at < length && (text[at] == ' ' || text[at] == '\t')) ++at;
    };
    skip_spaces();
    while (at < length && text[at] >= '0' && text[at] <= '9') ++at;  // time on a CPU
    if (at == 0 || at >= length || text[at] != ' ') return 0;
    skip_spaces();
    std::uint64_t delay = 0;
    long digits = 0;
    for (; at < length && text[at] >= '0' && text[at] <= '9'; ++at, ++digits)
        delay = delay * 10 + std::uint64_t(text[at] - '0');
    return digits > 0 ? delay : 0;
}

RunDelay::RunDelay() : tid_(::syscall(SYS_gettid)) {
    fd_ = open_own_schedstat(tid_);
}

RunDelay::RunDelay(long pid) : tid_(pid), own_(false) {
    std::string path =
        "/proc/" + std::to_string(pid) + "/task/" + std::to_string(pid) + "/schedstat";
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
}

RunDelay::~RunDelay() {
    if (fd_ >= 0) ::close(fd_);
}

std::uint64_t RunDelay::now_ns() {
    // The file is the thread's that opened it: another thread asking opens its own.
    long tid = own_ ? ::syscall(SYS_gettid) : tid_;
    if (tid != tid_) {
        if (fd_ >= 0) ::close(fd_);
        tid_ = tid;
        fd_ = open_own_schedstat(tid_);
    }
    if (fd_ < 0) return 0;
    char buf[128];
    ssize_t got = ::pread(fd_, buf, sizeof buf - 1, 0);
    if (got <= 0) return 0;
    return parse_run_delay(buf, long(got));
}

}  // namespace kbench::timing
