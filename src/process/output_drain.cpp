#include "process/output_drain.hpp"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>

namespace kbench::sandbox {

OutputDrain::OutputDrain(int fd, std::size_t capture_bytes)
    : fd_(fd), output_(capture_bytes, capture_bytes) {
    if (::pipe2(wake_, O_CLOEXEC) != 0) wake_[0] = wake_[1] = -1;
    thread_ = std::thread([this] { run(); });
}

OutputDrain::~OutputDrain() {
    if (wake_[1] >= 0) (void)!::write(wake_[1], "x", 1);
    if (thread_.joinable()) thread_.join();
    for (int fd : {fd_, wake_[0], wake_[1]})
        if (fd >= 0) ::close(fd);
}

void OutputDrain::run() {
    char buffer[1 << 16];
    while (fd_ >= 0) {
        pollfd fds[2] = {{fd_, POLLIN, 0}, {wake_[0], POLLIN, 0}};
        int ready = ::poll(fds, wake_[0] >= 0 ? 2 : 1, 1000);
        if (ready < 0 && errno == EINTR) continue;
        if (ready < 0) break;
        if (ready > 0 && fds[1].revents) break;  // told to stop
        if (ready == 0 || !fds[0].revents) continue;
        ssize_t n = ::read(fd_, buffer, sizeof buffer);
        if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        if (n <= 0) break;  // every writer is gone
        std::lock_guard<std::mutex> guard(mutex_);
        output_.append(std::string_view(buffer, std::size_t(n)));
    }
    ended_ = true;
}

std::string OutputDrain::text() const {
    std::lock_guard<std::mutex> guard(mutex_);
    return output_.text();
}

void OutputDrain::wait_for_end(std::chrono::milliseconds at_most) {
    auto deadline = std::chrono::steady_clock::now() + at_most;
    while (!ended_ && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
}

}  // namespace kbench::sandbox
