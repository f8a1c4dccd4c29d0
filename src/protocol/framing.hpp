#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.hpp"

namespace kbench::sandbox {

using json = nlohmann::json;

// Control messages between processes: a 4-byte little-endian length, then that many bytes of
// JSON. File descriptors may ride along on a message as SCM_RIGHTS.
inline constexpr std::size_t kMaxFrameBytes = 64u << 20;

using kbench::ProtocolError;

struct Message {
    json body;
    std::vector<int> fds;  // received descriptors, owned by the receiver
};

// Sends one message; throws ProtocolError when the peer is gone.
void send_message(int fd, const json& body, const std::vector<int>& fds = {});

// Reads one message, blocking; nullopt on a clean end of stream. For trusted peers only.
std::optional<Message> recv_message(int fd);

// Incremental decoder for untrusted, non-blocking peers.
class FrameReader {
  public:
    void feed(const char* data, std::size_t size);
    // The next complete message, if one has arrived; throws ProtocolError on a bad frame.
    std::optional<json> next();
    bool has_partial() const { return !buffer_.empty(); }

  private:
    std::string buffer_;
};

std::string encode_frame(const json& body);

// One recvmsg of at most size bytes into buf (close-on-exec for what comes with them): the
// descriptors that ride on those bytes are appended to fds, and *truncated (if given) is set
// when more came than fit (64). What recvmsg returned.
ssize_t receive_some(int fd, char* buf, std::size_t size, std::vector<int>& fds,
                     bool* truncated = nullptr);

// One sendmsg of frame from byte done on, with fds (if any) riding on it; what sendmsg returned.
ssize_t send_frame_part(int fd, const std::string& frame, std::size_t done,
                        const std::vector<int>& fds);

// A worker's life: send hello, then answer each request with handle(op, request) until the
// request {"op": "exit"} or the end of the stream.
void serve_requests(int fd, const json& hello,
                    const std::function<json(const std::string& op, const json& request)>& handle);

}  // namespace kbench::sandbox
