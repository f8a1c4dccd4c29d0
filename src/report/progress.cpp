#include "report/progress.hpp"

#include <cstdio>

namespace kbench::report {

std::string format_duration(double seconds) {
    auto s = long(seconds + 0.5);
    char text[32];
    if (s >= 3600)
        std::snprintf(text, sizeof(text), "%ldh %02ldm", s / 3600, (s % 3600) / 60);
    else if (s >= 60)
        std::snprintf(text, sizeof(text), "%ldm %02lds", s / 60, s % 60);
    else
        std::snprintf(text, sizeof(text), "%lds", s);
    return text;
}

Progress::Progress(std::size_t total, std::ostream& out, bool terminal)
    : total_(total), out_(out), terminal_(terminal), start_(std::chrono::steady_clock::now()) {}

std::string Progress::line() const {
    double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    char head[128];
    double per_minute = elapsed > 0 ? 60.0 * double(done_) / elapsed : 0;
    std::snprintf(head, sizeof(head), "%zu/%zu done, %.1f/min", done_, total_, per_minute);
    std::string text = head;
    if (done_ > 0 && done_ < total_)
        text += ", ETA " + format_duration(elapsed / double(done_) * double(total_ - done_));
    if (!counts_.empty()) {
        text += " |";
        bool first = true;
        for (const auto& [status, count] : counts_) {
            text += (first ? " " : ", ") + status + " " + std::to_string(count);
            first = false;
        }
    }
    return text;
}

void Progress::add(const std::string& status) {
    ++done_;
    ++counts_[status];
    if (terminal_)
        out_ << "\r\033[K" << line() << std::flush;
    else
        out_ << line() << "\n" << std::flush;
}

void Progress::finish() {
    if (terminal_) out_ << "\n" << std::flush;
}

}  // namespace kbench::report
