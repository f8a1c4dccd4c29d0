#include "process/channel.hpp"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

namespace kbench::sandbox {
namespace {

void set_nonblocking(int fd) {
    if (fd < 0) return;
    int flags = ::fcntl(fd, F_GETFL, 0);
    ::fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

int millis_until(Clock::time_point deadline) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return 0;
    return int(std::min<long long>(left.count(), 1000LL * 3600));
}

}  // namespace

Channel::Channel(int socket_fd, int output_fd, std::size_t capture_bytes, bool accept_fds)
    : socket_fd_(socket_fd),
      output_fd_(output_fd),
      output_(capture_bytes, capture_bytes),
      accept_fds_(accept_fds) {
    set_nonblocking(socket_fd_);
    set_nonblocking(output_fd_);
}

Channel::~Channel() {
    for (int fd : fds_) ::close(fd);
    if (socket_fd_ >= 0) ::close(socket_fd_);
    if (output_fd_ >= 0) ::close(output_fd_);
}

int Channel::release_socket() {
    int fd = socket_fd_;
    socket_fd_ = -1;
    socket_open_ = false;
    if (fd >= 0) {
        int flags = ::fcntl(fd, F_GETFL, 0);
        ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
    }
    return fd;
}

void Channel::send(const json& body, const std::vector<int>& fds) {
    if (socket_fd_ < 0) throw ProtocolError("the socket was handed over");
    // Control messages are small; a blocking write keeps framing simple.
    int flags = ::fcntl(socket_fd_, F_GETFL, 0);
    ::fcntl(socket_fd_, F_SETFL, flags & ~O_NONBLOCK);
    try {
        send_message(socket_fd_, body, fds);
    } catch (...) {
        ::fcntl(socket_fd_, F_SETFL, flags);
        throw;
    }
    ::fcntl(socket_fd_, F_SETFL, flags);
}

bool Channel::read_socket() {
    char buffer[1 << 16];
    for (;;) {
        std::vector<int> fds;
        ssize_t n = receive_some(socket_fd_, buffer, sizeof buffer, fds);
        for (int fd : fds) accept_fds_ ? fds_.push_back(fd) : void(::close(fd));
        if (n > 0) {
            reader_.feed(buffer, std::size_t(n));
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
        return false;  // end of stream or a hard error
    }
}

void Channel::read_output() {
    if (output_fd_ < 0) return;
    char buffer[1 << 16];
    for (;;) {
        ssize_t n = ::read(output_fd_, buffer, sizeof(buffer));
        if (n > 0) {
            output_.append(std::string_view(buffer, std::size_t(n)));
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n == 0) {
            ::close(output_fd_);
            output_fd_ = -1;
        }
        return;
    }
}

Channel::Reply Channel::receive(Clock::time_point deadline) {
    for (;;) {
        try {
            if (auto body = reader_.next())
                return {Event::message, std::move(*body), std::exchange(fds_, {})};
        } catch (const ProtocolError& e) {
            protocol_error_ = e.what();
            socket_open_ = false;
            return {Event::closed, {}};
        }
        if (!socket_open_) return {Event::closed, {}};
        pollfd fds[2] = {{socket_fd_, POLLIN, 0}, {output_fd_, POLLIN, 0}};
        int count = output_fd_ >= 0 ? 2 : 1;
        if (socket_fd_ < 0) return {Event::closed, {}};
        int ready = ::poll(fds, nfds_t(count), millis_until(deadline));
        if (ready < 0 && errno == EINTR) continue;
        if (count == 2 && fds[1].revents) read_output();
        if (fds[0].revents) socket_open_ = read_socket();
        if (ready == 0 && Clock::now() >= deadline) return {Event::timed_out, {}};
    }
}

void Channel::drain_output(std::chrono::milliseconds at_most) {
    auto deadline = Clock::now() + at_most;
    while (output_fd_ >= 0) {
        pollfd fd{output_fd_, POLLIN, 0};
        int ready = ::poll(&fd, 1, millis_until(deadline));
        if (ready <= 0) return;
        read_output();
    }
}

}  // namespace kbench::sandbox
