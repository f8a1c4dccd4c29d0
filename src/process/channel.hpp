#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <vector>

#include "process/bounded_output.hpp"
#include "protocol/framing.hpp"

namespace kbench::sandbox {

using Clock = std::chrono::steady_clock;

// The orchestrator's end of a conversation with one worker process: framed JSON over a socket,
// the process's output captured (bounded) from a pipe, every wait bounded by a deadline.
class Channel {
  public:
    enum class Event { message, closed, timed_out };
    struct Reply {
        Event event = Event::closed;
        json body;
        std::vector<int> fds;  // descriptors that came with it (accepted ones), the caller's
    };

    // Takes ownership of both descriptors; output_fd may be -1 (output goes elsewhere).
    // Descriptors the peer sends are closed unless accept_fds (a peer of kbench's own).
    Channel(int socket_fd, int output_fd, std::size_t capture_bytes = 32 << 10,
            bool accept_fds = false);
    ~Channel();
    Channel(const Channel&) = delete;
    Channel& operator=(const Channel&) = delete;

    // Throws ProtocolError if the peer has gone away.
    void send(const json& body, const std::vector<int>& fds = {});
    // The next message, or closed (peer hung up or sent garbage), or timed_out.
    Reply receive(Clock::time_point deadline);
    // Reads what is left of the output until its end, or for at most the given time.
    void drain_output(std::chrono::milliseconds at_most);

    const BoundedOutput& output() const { return output_; }
    // Hands the socket over (the caller owns it from here); the output stays.
    int release_socket();
    bool has_socket() const { return socket_fd_ >= 0; }
    const std::string& protocol_error() const { return protocol_error_; }

  private:
    bool read_socket();
    void read_output();

    int socket_fd_;
    int output_fd_;
    FrameReader reader_;
    BoundedOutput output_;
    bool socket_open_ = true;
    std::string protocol_error_;
    bool accept_fds_ = false;
    std::vector<int> fds_;  // received, not yet handed out with a message
};

}  // namespace kbench::sandbox
