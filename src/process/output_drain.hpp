#pragma once

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>

#include "process/bounded_output.hpp"

namespace kbench::sandbox {

// Reads a process's output pipe on a thread of its own until the pipe ends, keeping its head
// and tail: a candidate that writes without end neither blocks on a full pipe nor costs memory,
// whatever kbench is waiting for meanwhile.
class OutputDrain {
  public:
    explicit OutputDrain(int fd, std::size_t capture_bytes = 32 << 10);  // takes the descriptor
    ~OutputDrain();
    OutputDrain(const OutputDrain&) = delete;
    OutputDrain& operator=(const OutputDrain&) = delete;

    std::string text() const;
    // Waits until the pipe has ended (every writer gone), or at most the given time.
    void wait_for_end(std::chrono::milliseconds at_most);

  private:
    void run();

    int fd_;
    int wake_[2] = {-1, -1};
    BoundedOutput output_;
    mutable std::mutex mutex_;
    std::atomic<bool> ended_{false};
    std::thread thread_;
};

}  // namespace kbench::sandbox
