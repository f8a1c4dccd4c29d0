#pragma once

#include <chrono>
#include <map>
#include <ostream>
#include <string>

namespace kbench::report {

// "12/40 done, 3.1/min, ETA 9m 02s | correct 8, incorrect 2": one line redrawn in place on a
// terminal, one line per update otherwise.
class Progress {
  public:
    Progress(std::size_t total, std::ostream& out, bool terminal);

    void add(const std::string& status);
    void finish();
    std::string line() const;

  private:
    std::size_t total_;
    std::size_t done_ = 0;
    std::ostream& out_;
    bool terminal_;
    std::map<std::string, std::size_t> counts_;
    std::chrono::steady_clock::time_point start_;
};

std::string format_duration(double seconds);  // "9m 02s", "1h 03m", "42s"

}  // namespace kbench::report
