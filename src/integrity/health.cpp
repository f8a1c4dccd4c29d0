#include "integrity/health.hpp"

namespace kbench::integrity {

HealthStore::HealthStore(fs::path dir) : dir_(std::move(dir)) {}

HealthStore HealthStore::in_cache() {
    return HealthStore(cache_root() / "health");
}

fs::path HealthStore::path(const std::string& problem_sha256, Precision precision) const {
    return dir_ / (problem_sha256 + "-" + std::string(to_string(precision)) + ".json");
}

void HealthStore::save(const std::string& problem_sha256, Precision precision,
                       const json& health) const {
    fs::create_directories(dir_);
    write_file_atomic(path(problem_sha256, precision), health.dump(2) + "\n");
}

json HealthStore::load(const std::string& problem_sha256, Precision precision) const {
    std::error_code missing;
    fs::path file = path(problem_sha256, precision);
    if (!fs::exists(file, missing)) return nullptr;
    try {
        json j = json::parse(read_file(file));
        return j.is_object() ? j : json(nullptr);
    } catch (const std::exception&) {
        return nullptr;  // a damaged record is as good as none: the audit writes it again
    }
}

std::vector<std::string> health_flags(const json& health) {
    std::vector<std::string> flags;
    if (!health.is_object() || !health.contains("flags") || !health["flags"].is_array())
        return flags;
    for (const auto& f : health["flags"])
        if (f.is_string()) flags.push_back(f.get<std::string>());
    return flags;
}

}  // namespace kbench::integrity
