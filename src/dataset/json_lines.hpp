#pragma once

#include <functional>
#include <string>

#include <nlohmann/json.hpp>

namespace kbench::dataset {

// Calls visit(row, "FILE:LINE") for each non-blank line of text; a line that is not JSON is a
// UsageError naming the file and line.
void for_each_json_line(
    const std::string& text, const std::string& file,
    const std::function<void(const nlohmann::json& row, const std::string& source)>& visit);

}  // namespace kbench::dataset
