#pragma once

#include <string>
#include <vector>

#include "core/config.hpp"
#include "core/files.hpp"

namespace kbench::integrity {

// Problem health as `kbench dataset audit` found it: a reference whose output does not depend
// on its inputs (constant_output), that an all-zero output matches (zero_passes), or that
// differs between two runs on the same inputs (nondeterministic). Kept per problem (its source's
// SHA-256) and precision under the cache (KBENCH_CACHE, else ~/.cache/kbench) in health/, so
// that every later verdict on the problem carries the flags.
class HealthStore {
  public:
    explicit HealthStore(fs::path dir);
    static HealthStore in_cache();  // cache_root() / "health"

    void save(const std::string& problem_sha256, Precision precision, const json& health) const;
    // What the audit recorded, or null.
    json load(const std::string& problem_sha256, Precision precision) const;

  private:
    fs::path path(const std::string& problem_sha256, Precision precision) const;
    fs::path dir_;
};

// The flags of a health record ([] for null).
std::vector<std::string> health_flags(const json& health);

}  // namespace kbench::integrity
