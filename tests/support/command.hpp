#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kbench::test {

struct CommandResult {
    int exit_code = -1;
    std::string out;
    std::string err;
};

// A command's JSON lines (--json output), empty lines skipped.
inline std::vector<nlohmann::json> json_lines(const std::string& text) {
    std::vector<nlohmann::json> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);)
        if (!line.empty()) out.push_back(nlohmann::json::parse(line));
    return out;
}

inline std::string quote(const std::string& s) {
    std::string out = "'";
    for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
}

// Runs a shell command line; captures standard output and standard error separately.
inline CommandResult run_command(const std::string& command) {
    static int counter = 0;
    auto err_path =
        std::filesystem::temp_directory_path() /
        ("kbench-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++) + ".err");
    CommandResult result;
    FILE* pipe = ::popen((command + " 2>" + quote(err_path.string())).c_str(), "r");
    char buffer[1 << 16];
    while (std::size_t n = std::fread(buffer, 1, sizeof(buffer), pipe))
        result.out.append(buffer, n);
    int status = ::pclose(pipe);
    result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    std::ifstream in(err_path);
    result.err.assign(std::istreambuf_iterator<char>(in), {});
    std::filesystem::remove(err_path);
    return result;
}

}  // namespace kbench::test
