#pragma once

#include <chrono>
#include <map>
#include <ostream>
#include <string>

namespace kbench::report {

// "12/40 done, 3.1/min, ETA 9m 02s | correct 8, incorrect 2": one line redrawn in place on a
// terminal (log lines clear it and it comes back under them), one line per update otherwise.
class Progress {
  public:
    Progress(std::size_t total, std::ostream& out, bool terminal);
    ~Progress();

    // One item done; line (if not empty) is printed above the status line.
    void add(const std::string& status, const std::string& line = {});
    void finish();
    std::string status_line() const;

  private:
    std::size_t total_;
    std::size_t done_ = 0;
    std::ostream& out_;
    bool terminal_;
    bool finished_ = false;
    std::map<std::string, std::size_t> counts_;
    std::chrono::steady_clock::time_point start_;
};

// Prints a log line to out; on a terminal with a status line drawn, clears it first and draws
// it again below. Every line kbench logs while a Progress lives goes through here.
void print_line(std::ostream& out, const std::string& line);

std::string format_duration(double seconds);  // "9m 02s", "1h 03m", "42s"

}  // namespace kbench::report
