#include "store/run_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "core/error.hpp"

namespace kbench::store {

RunLock::RunLock(const fs::path& run_dir) {
    fs::path path = run_dir / "lock";
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0)
        throw UsageError("cannot open " + path.string() + ": " + std::strerror(errno),
                         "check that the run's folder is writable, or pass --runs-dir elsewhere");
    if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
        int error = errno;
        char buf[32] = {};
        ssize_t n = ::pread(fd_, buf, sizeof buf - 1, 0);
        std::string holder = n > 0 ? std::string(buf, std::size_t(n)) : "";
        while (!holder.empty() && (holder.back() == '\n' || holder.back() == ' '))
            holder.pop_back();
        ::close(fd_);
        fd_ = -1;
        if (error != EWOULDBLOCK)
            throw UsageError("cannot lock " + path.string() + ": " + std::strerror(error));
        throw UsageError("the run " + run_dir.string() + " is in use by another kbench (pid " +
                             (holder.empty() ? "unknown" : holder) + ")",
                         "wait for it to finish, stop it (kill -INT " +
                             (holder.empty() ? "PID" : holder) +
                             ": it keeps what it finished), or use another --run name");
    }
    std::string pid = std::to_string(::getpid()) + "\n";
    if (::ftruncate(fd_, 0) == 0) {
        ssize_t ignored = ::pwrite(fd_, pid.data(), pid.size(), 0);
        (void)ignored;
    }
}

RunLock::~RunLock() {
    if (fd_ >= 0) ::close(fd_);
}

}  // namespace kbench::store
