#include "dataset/problem_file.hpp"

#include <regex>

namespace kbench::dataset {

ProblemIdentity identify_problem_file(const fs::path& path) {
    ProblemIdentity identity;
    identity.name = path.stem().string();
    std::smatch match;
    static const std::regex leading_number(R"(^(\d+)_)");
    if (std::regex_search(identity.name, match, leading_number)) identity.id = std::stoi(match[1]);
    static const std::regex level_dir(R"(^level_?(\d+)$)", std::regex::icase);
    for (const auto& part : path.parent_path()) {
        std::string text = part.string();
        if (std::regex_match(text, match, level_dir)) identity.level = std::stoi(match[1]);
    }
    return identity;
}

}  // namespace kbench::dataset
