#include "process/bounded_output.hpp"

#include <algorithm>

namespace kbench::sandbox {

BoundedOutput::BoundedOutput(std::size_t head_bytes, std::size_t tail_bytes)
    : head_limit_(head_bytes), tail_limit_(tail_bytes) {}

void BoundedOutput::append(std::string_view data) {
    total_ += data.size();
    std::size_t to_head = std::min(data.size(), head_limit_ - head_.size());
    head_.append(data.substr(0, to_head));
    data.remove_prefix(to_head);
    if (data.empty() || tail_limit_ == 0) return;
    if (data.size() >= tail_limit_) {
        tail_.assign(data.substr(data.size() - tail_limit_));
        return;
    }
    tail_.append(data);
    // Trim lazily, so that many small writes stay linear in time.
    if (tail_.size() > 2 * tail_limit_) tail_.erase(0, tail_.size() - tail_limit_);
}

std::size_t BoundedOutput::dropped_bytes() const {
    std::size_t kept = head_.size() + std::min(tail_.size(), tail_limit_);
    return total_ - kept;
}

std::string BoundedOutput::text() const {
    std::string_view tail = tail_;
    if (tail.size() > tail_limit_) tail.remove_prefix(tail.size() - tail_limit_);
    std::string out = head_;
    if (std::size_t dropped = dropped_bytes(); dropped > 0)
        out += "\n[... " + std::to_string(dropped) + " bytes of output dropped ...]\n";
    out += tail;
    return out;
}

}  // namespace kbench::sandbox
