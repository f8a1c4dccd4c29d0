#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/files.hpp"

namespace kbench::store {

using json = nlohmann::json;

// One stored verdict, keyed by what decides it: problem code, candidate code and configuration.
struct StoredVerdict {
    std::string key;
    int level = 0;
    int problem_id = 0;
    int sample_id = 0;
    std::string status;
    json verdict;
    std::string stored_at;  // when it was written (UTC, ISO 8601); set by the store
};

// Where verdicts live. Every put is durable when it returns, so a killed run loses nothing it
// reported. One implementation a database.
class VerdictStore {
  public:
    virtual ~VerdictStore() = default;
    virtual std::optional<StoredVerdict> find(const std::string& key) = 0;
    virtual void put(const StoredVerdict& verdict) = 0;  // insert, or replace the same key
    virtual std::vector<StoredVerdict> all() = 0;        // by level, problem, sample
    // Records, durably, that an evaluation of KEY begins; returns how many have begun so far.
    // A key with attempts and no verdict was being evaluated when its run stopped.
    virtual int begin_attempt(const std::string& key) = 0;
    virtual int attempts(const std::string& key) = 0;
    // Takes back a begun attempt: kbench was interrupted (a signal), not stopped by the candidate.
    virtual void cancel_attempt(const std::string& key) = 0;
    // The run's own records (its configuration), by name.
    virtual std::optional<std::string> meta(const std::string& name) = 0;
    virtual void set_meta(const std::string& name, const std::string& value) = 0;
    // The records whose names begin with prefix, by name; and one record gone.
    virtual std::vector<std::pair<std::string, std::string>> metas(const std::string& prefix) = 0;
    virtual void erase_meta(const std::string& name) = 0;
};

// The layout and key rules this kbench writes; a database of another version is refused with a
// message that says what to do, never misread.
constexpr int kStoreVersion = 2;

// SQLite in WAL mode: one file, safe for several threads of one process.
std::unique_ptr<VerdictStore> open_sqlite_store(const fs::path& path);

}  // namespace kbench::store
