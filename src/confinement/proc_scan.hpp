#pragma once

#include <fcntl.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#include <cstddef>

// Reading /proc and writing report lines without allocating: for a process between fork and exec
// (a confined process's relay and init), and for anyone who lists processes.
namespace kbench::sandbox {

// Appends a decimal number to buf at *at (no allocation).
inline void put_number(char* buf, std::size_t& at, std::size_t cap, long long value) {
    char digits[24];
    int n = 0;
    bool negative = value < 0;
    unsigned long long v = negative ? 0ull - (unsigned long long)value : (unsigned long long)value;
    do {
        digits[n++] = char('0' + v % 10);
        v /= 10;
    } while (v && n < 23);
    if (negative && at < cap) buf[at++] = '-';
    while (n > 0 && at < cap) buf[at++] = digits[--n];
}

inline void put_text(char* buf, std::size_t& at, std::size_t cap, const char* text) {
    while (*text && at < cap) buf[at++] = *text++;
}

// Reads a small file into buf (no allocation); returns the bytes read.
inline std::size_t read_small(const char* path, char* buf, std::size_t cap) {
    int fd = ::open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    ssize_t n = ::read(fd, buf, cap);
    ::close(fd);
    return n > 0 ? std::size_t(n) : 0;
}

struct LinuxDirent64 {
    ino64_t d_ino;
    off64_t d_off;
    unsigned short d_reclen;
    unsigned char d_type;
    char d_name[1];  // the kernel writes the whole name from here on
};

// Calls visit(pid) for every process under /proc (no allocation).
template <typename Visit>
inline void each_process(Visit visit) {
    int dir = ::open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir < 0) return;
    alignas(8) char buf[4096];
    for (;;) {
        long n = ::syscall(SYS_getdents64, dir, buf, sizeof buf);
        if (n <= 0) break;
        for (long off = 0; off < n;) {
            auto* e = reinterpret_cast<LinuxDirent64*>(buf + off);
            off += e->d_reclen;
            long pid = 0;
            bool digits = e->d_name[0] != '\0';
            for (const char* c = e->d_name; *c; ++c) {
                if (*c < '0' || *c > '9') {
                    digits = false;
                    break;
                }
                pid = pid * 10 + (*c - '0');
            }
            if (digits) visit(pid_t(pid));
        }
    }
    ::close(dir);
}

// "/proc/<pid>/<leaf>" into path (no allocation).
inline void proc_path(char (&path)[48], pid_t pid, const char* leaf) {
    std::size_t at = 0;
    put_text(path, at, sizeof path - 1, "/proc/");
    put_number(path, at, sizeof path - 1, pid);
    put_text(path, at, sizeof path - 1, "/");
    put_text(path, at, sizeof path - 1, leaf);
    path[at] = '\0';
}

// The parent of pid from /proc/pid/stat (no allocation); 0 when unknown.
inline pid_t parent_of(pid_t pid) {
    char path[48], buf[512];
    proc_path(path, pid, "stat");
    std::size_t n = read_small(path, buf, sizeof buf - 1);
    buf[n] = '\0';
    const char* close = nullptr;
    for (std::size_t i = 0; i < n; ++i)
        if (buf[i] == ')') close = buf + i;
    if (!close) return 0;
    const char* p = close + 2;  // ") S ppid"
    while (*p && *p != ' ') ++p;
    long ppid = 0;
    for (++p; *p >= '0' && *p <= '9'; ++p) ppid = ppid * 10 + (*p - '0');
    return pid_t(ppid);
}

}  // namespace kbench::sandbox
