#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace kbench::sandbox {

// Keeps the first and the last bytes of a stream and counts what it dropped between them, so
// that megabytes of output cost a fixed amount of memory.
class BoundedOutput {
  public:
    explicit BoundedOutput(std::size_t head_bytes = 32 << 10, std::size_t tail_bytes = 32 << 10);

    void append(std::string_view data);
    std::string text() const;
    std::size_t total_bytes() const { return total_; }
    std::size_t dropped_bytes() const;

  private:
    std::size_t head_limit_;
    std::size_t tail_limit_;
    std::string head_;
    std::string tail_;  // a window over the most recent bytes past the head
    std::size_t total_ = 0;
};

}  // namespace kbench::sandbox
