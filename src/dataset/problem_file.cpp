#include "dataset/problem_file.hpp"

#include <regex>

namespace kbench::dataset {

std::optional<int> level_of_folder(const std::string& name) {
    static const std::regex level(R"(^level_?(\d+)$)", std::regex::icase);
    std::smatch m;
    if (std::regex_match(name, m, level)) return std::stoi(m[1]);
    return std::nullopt;
}

ProblemIdentity identify_problem_file(const fs::path& path) {
    ProblemIdentity identity;
    identity.name = path.stem().string();
    std::smatch match;
    static const std::regex leading_number(R"(^(\d+)_)");
    if (std::regex_search(identity.name, match, leading_number)) identity.id = std::stoi(match[1]);
    for (const auto& part : path.parent_path())
        if (auto level = level_of_folder(part.string())) identity.level = level;
    return identity;
}

}  // namespace kbench::dataset
