#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include "core/error.hpp"

// Small checks the unit tests of text (prompts, extraction, feedback) share.
namespace kbench::test {

inline bool contains(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

// What a UsageError that f throws says, with its hint after " | "; a failure if it throws none.
inline std::string usage_error_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const UsageError& e) {
        return std::string(e.what()) + " | " + e.hint();
    }
    ADD_FAILURE() << "no UsageError";
    return {};
}

inline void write(const std::filesystem::path& path, const std::string& text) {
    std::ofstream(path) << text;
}

}  // namespace kbench::test
