#include "dataset/json_lines.hpp"

#include <sstream>

#include "core/error.hpp"

namespace kbench::dataset {

void for_each_json_line(
    const std::string& text, const std::string& file,
    const std::function<void(const nlohmann::json& row, const std::string& source)>& visit) {
    std::istringstream in(text);
    int line_number = 0;
    for (std::string line; std::getline(in, line);) {
        ++line_number;
        if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
        std::string source = file + ":" + std::to_string(line_number);
        nlohmann::json row;
        try {
            row = nlohmann::json::parse(line);
        } catch (const nlohmann::json::exception& e) {
            throw UsageError(source + " is not JSON: " + e.what(), "one JSON object a line");
        }
        visit(row, source);
    }
}

}  // namespace kbench::dataset
