#pragma once

#include <chrono>
#include <string>

#include "core/files.hpp"

namespace kbench::orchestrator {

// Small helpers for messages and deadlines shared by the scheduling code.
std::string seconds_text(double seconds);                        // "1.2 s"
using kbench::last_line;                                         // core/files.hpp
std::string capped(const std::string& text, std::size_t limit);  // head and tail kept
std::string first_error_line(const std::string& log);            // for one-line reasons
double seconds_since(std::chrono::steady_clock::time_point start);
double seconds_left(std::chrono::steady_clock::time_point deadline);

}  // namespace kbench::orchestrator
