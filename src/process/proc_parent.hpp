#pragma once

#include <fcntl.h>
#include <sys/types.h>
#include <unistd.h>

namespace kbench::sandbox {

// The parent of pid as /proc says, 0 when it cannot be read. System calls only, no allocation:
// safe in a signal handler.
inline pid_t parent_of(pid_t pid) {
    char path[48] = "/proc/";
    int at = 6;
    char digits[16];
    int n = 0;
    for (pid_t v = pid; v > 0 && n < 15; v /= 10) digits[n++] = char('0' + v % 10);
    while (n > 0) path[at++] = digits[--n];
    for (const char* tail = "/stat"; *tail;) path[at++] = *tail++;
    path[at] = '\0';
    int fd = ::open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    char buf[512];
    ssize_t got = ::read(fd, buf, sizeof buf - 1);
    ::close(fd);
    if (got <= 0) return 0;
    buf[got] = '\0';
    const char* close = nullptr;  // the command name may hold ')': the last one ends it
    for (ssize_t i = 0; i < got; ++i)
        if (buf[i] == ')') close = buf + i;
    if (!close || close + 4 >= buf + got) return 0;
    pid_t parent = 0;
    for (const char* p = close + 4; *p >= '0' && *p <= '9'; ++p) parent = parent * 10 + (*p - '0');
    return parent;
}

}  // namespace kbench::sandbox
