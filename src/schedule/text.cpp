#include "schedule/text.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <regex>

namespace kbench::schedule {

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

std::string first_error_line(const std::string& log) {
    // A Python syntax error names its place in the frame line before it: File "x.py", line 5.
    static const std::regex frame(R"re(File "([^"]*)", line (\d+))re");
    static const std::regex syntax(R"re(^\s*(SyntaxError|IndentationError|TabError)\b)re");
    std::string place;
    std::size_t pos = 0;
    while (pos < log.size()) {
        std::size_t end = log.find('\n', pos);
        std::string line =
            log.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
        std::smatch m;
        if (std::regex_search(line, m, frame))
            place = "line " + m[2].str() + " of " + fs::path(m[1].str()).filename().string();
        if (line.find("error") != std::string::npos &&
            line.find("Error building") == std::string::npos)
            return capped(line, 400);
        if (std::regex_search(line, syntax) && !place.empty())
            return capped(line, 400) + " (" + place + ")";
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

}  // namespace kbench::schedule
