#include "orchestrator/engine/text.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <filesystem>

namespace kbench::orchestrator {

namespace fs = std::filesystem;

std::string seconds_text(double seconds) {
    char text[32];
    std::snprintf(text, sizeof(text), "%.1f s", seconds);
    return text;
}

std::string capped(const std::string& text, std::size_t limit) {
    if (text.size() <= limit) return text;
    return text.substr(0, limit / 2) + "\n[... " + std::to_string(text.size() - limit) +
           " bytes dropped ...]\n" + text.substr(text.size() - limit / 2);
}

namespace {

// "line N of x.py" from a Python frame line (File "/path/x.py", line N), or "". Plain string
// search: the log is the candidate's to fill.
std::string frame_place(const std::string& line) {
    std::size_t file = line.find("File \"");
    if (file == std::string::npos) return "";
    std::size_t start = file + 6;
    std::size_t quote = line.find('"', start);
    if (quote == std::string::npos || line.compare(quote, 8, "\", line ") != 0) return "";
    std::size_t digits = quote + 8, end = digits;
    while (end < line.size() && end - digits < 9 &&
           std::isdigit(static_cast<unsigned char>(line[end])))
        ++end;
    if (end == digits) return "";
    return "line " + line.substr(digits, end - digits) + " of " +
           fs::path(line.substr(start, quote - start)).filename().string();
}

bool syntax_error(const std::string& line) {
    std::size_t first = line.find_first_not_of(" \t");
    if (first == std::string::npos) return false;
    for (const char* kind : {"SyntaxError", "IndentationError", "TabError"})
        if (line.compare(first, std::strlen(kind), kind) == 0) return true;
    return false;
}

}  // namespace

std::string first_error_line(const std::string& log) {
    // A Python syntax error names its place in the frame line before it.
    std::string place;
    std::size_t pos = 0;
    while (pos < log.size()) {
        std::size_t end = log.find('\n', pos);
        std::string line =
            log.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
        if (std::string here = frame_place(line); !here.empty()) place = here;
        if (line.find("error") != std::string::npos &&
            line.find("Error building") == std::string::npos)
            return capped(line, 400);
        if (syntax_error(line) && !place.empty()) return capped(line, 400) + " (" + place + ")";
        if (end == std::string::npos) break;
        pos = end + 1;
    }
    return capped(last_line(log), 400);
}

double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

double seconds_left(std::chrono::steady_clock::time_point deadline) {
    return std::max(
        0.0, std::chrono::duration<double>(deadline - std::chrono::steady_clock::now()).count());
}

}  // namespace kbench::orchestrator
