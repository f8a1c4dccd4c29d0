#include "report/progress.hpp"

#include <cstdio>
#include <mutex>

namespace kbench::report {
namespace {

// The status line now on the terminal (empty: none), shared with print_line.
std::mutex line_mutex;
std::string drawn;
std::ostream* drawn_on = nullptr;

}  // namespace

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

void print_line(std::ostream& out, const std::string& line) {
    std::lock_guard<std::mutex> guard(line_mutex);
    if (drawn_on == &out && !drawn.empty()) {
        out << "\r\033[K" << line << "\n" << drawn << std::flush;
    } else {
        out << line << "\n" << std::flush;
    }
}

Progress::Progress(std::size_t total, std::ostream& out, bool terminal)
    : total_(total), out_(out), terminal_(terminal), start_(std::chrono::steady_clock::now()) {}

Progress::~Progress() {
    finish();
}

std::string Progress::status_line() const {
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

void Progress::add(const std::string& status, const std::string& line) {
    ++done_;
    ++counts_[status];
    std::lock_guard<std::mutex> guard(line_mutex);
    if (terminal_) {
        drawn = status_line();
        drawn_on = &out_;
        out_ << "\r\033[K";
        if (!line.empty()) out_ << line << "\n";
        out_ << drawn << std::flush;
    } else {
        out_ << (line.empty() ? "" : line + " | ") << status_line() << "\n" << std::flush;
    }
}

void Progress::finish() {
    if (finished_) return;
    finished_ = true;
    std::lock_guard<std::mutex> guard(line_mutex);
    if (terminal_ && drawn_on == &out_ && !drawn.empty()) out_ << "\n" << std::flush;
    if (drawn_on == &out_) {
        drawn.clear();
        drawn_on = nullptr;
    }
}

}  // namespace kbench::report
