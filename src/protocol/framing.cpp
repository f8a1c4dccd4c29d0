#include "protocol/framing.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace kbench::sandbox {
namespace {

std::uint32_t decode_length(const char* p) {
    const auto* u = reinterpret_cast<const unsigned char*>(p);
    return std::uint32_t(u[0]) | (std::uint32_t(u[1]) << 8) | (std::uint32_t(u[2]) << 16) |
           (std::uint32_t(u[3]) << 24);
}

void check_length(std::uint32_t length) {
    if (length > kMaxFrameBytes)
        throw ProtocolError("message of " + std::to_string(length) + " bytes exceeds the " +
                            std::to_string(kMaxFrameBytes) + "-byte limit");
}

json parse_body(const char* data, std::size_t size) {
    try {
        return json::parse(data, data + size);
    } catch (const json::exception& e) {
        throw ProtocolError(std::string("message is not valid JSON: ") + e.what());
    }
}

// Reads exactly size bytes; false on end of stream before the first byte.
bool read_exact(int fd, char* out, std::size_t size, std::vector<int>& fds) {
    std::size_t done = 0;
    while (done < size) {
        ssize_t n = receive_some(fd, out + done, size - done, fds);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && errno == ENOTSOCK) n = ::read(fd, out + done, size - done);
        if (n < 0) throw ProtocolError(std::string("read failed: ") + std::strerror(errno));
        if (n == 0) {
            if (done == 0) return false;
            throw ProtocolError("peer closed the connection in the middle of a message");
        }
        done += std::size_t(n);
    }
    return true;
}

}  // namespace

ssize_t receive_some(int fd, char* buf, std::size_t size, std::vector<int>& fds, bool* truncated) {
    iovec iov{buf, size};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * 64)];
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    ssize_t n = ::recvmsg(fd, &msg, MSG_CMSG_CLOEXEC);
    if (n <= 0) return n;
    if (truncated && (msg.msg_flags & MSG_CTRUNC)) *truncated = true;
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
        const int* p = reinterpret_cast<const int*>(CMSG_DATA(c));
        fds.insert(fds.end(), p, p + (c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
    }
    return n;
}

std::string encode_frame(const json& body) {
    std::string text = body.dump(-1, ' ', false, json::error_handler_t::replace);
    check_length(std::uint32_t(std::min<std::size_t>(text.size(), 0xffffffffu)));
    std::string frame(4, '\0');
    auto length = std::uint32_t(text.size());
    for (int i = 0; i < 4; ++i) frame[std::size_t(i)] = char((length >> (8 * i)) & 0xff);
    frame += text;
    return frame;
}

ssize_t send_frame_part(int fd, const std::string& frame, std::size_t done,
                        const std::vector<int>& fds) {
    iovec iov{const_cast<char*>(frame.data()) + done, frame.size() - done};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    std::vector<char> control;
    if (!fds.empty()) {
        control.resize(CMSG_SPACE(sizeof(int) * fds.size()));
        msg.msg_control = control.data();
        msg.msg_controllen = control.size();
        cmsghdr* c = CMSG_FIRSTHDR(&msg);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
        std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
    }
    ssize_t n = ::sendmsg(fd, &msg, MSG_NOSIGNAL);
    if (n < 0 && errno == ENOTSOCK && fds.empty()) n = ::write(fd, iov.iov_base, iov.iov_len);
    return n;
}

void send_message(int fd, const json& body, const std::vector<int>& fds) {
    std::string frame = encode_frame(body);
    std::size_t done = 0;
    bool fds_sent = fds.empty();
    while (done < frame.size()) {
        ssize_t n = send_frame_part(fd, frame, done, fds_sent ? std::vector<int>{} : fds);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) throw ProtocolError(std::string("write failed: ") + std::strerror(errno));
        fds_sent = true;
        done += std::size_t(n);
    }
}

std::optional<Message> recv_message(int fd) {
    Message message;
    char header[4];
    if (!read_exact(fd, header, 4, message.fds)) return std::nullopt;
    std::uint32_t length = decode_length(header);
    check_length(length);
    std::string body(length, '\0');
    if (length > 0 && !read_exact(fd, body.data(), length, message.fds))
        throw ProtocolError("peer closed the connection in the middle of a message");
    message.body = parse_body(body.data(), body.size());
    return message;
}

void serve_requests(int fd, const json& hello,
                    const std::function<json(const std::string& op, const json& request)>& handle) {
    send_message(fd, hello);
    while (auto message = recv_message(fd)) {
        std::string op = message->body.value("op", std::string());
        if (op == "exit") return;
        send_message(fd, handle(op, message->body));
    }
}

void FrameReader::feed(const char* data, std::size_t size) {
    buffer_.append(data, size);
}

std::optional<json> FrameReader::next() {
    if (buffer_.size() < 4) return std::nullopt;
    std::uint32_t length = decode_length(buffer_.data());
    check_length(length);
    if (buffer_.size() < 4 + std::size_t(length)) return std::nullopt;
    json body = parse_body(buffer_.data() + 4, length);
    buffer_.erase(0, 4 + std::size_t(length));
    return body;
}

}  // namespace kbench::sandbox
