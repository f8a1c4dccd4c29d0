#include <sqlite3.h>

#include <mutex>

#include "core/error.hpp"
#include "core/fields.hpp"
#include "store/sqlite_statement.hpp"
#include "store/verdict_store.hpp"

namespace kbench::store {
namespace {

class SqliteStore final : public VerdictStore {
  public:
    explicit SqliteStore(const fs::path& path) {
        if (path.has_parent_path()) fs::create_directories(path.parent_path());
        if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE,
                            nullptr) != SQLITE_OK) {
            std::string error = db_ ? sqlite3_errmsg(db_) : "out of memory";
            sqlite3_close(db_);
            throw UsageError("cannot open the verdict database " + path.string() + ": " + error,
                             "check that its folder is writable, or pass --db elsewhere");
        }
        sqlite3_busy_timeout(db_, 30000);
        exec("PRAGMA journal_mode=WAL");
        exec("PRAGMA synchronous=NORMAL");
        int version = user_version();
        bool has_tables = table_exists("verdicts");
        if (version == 0 && has_tables) version = 1;  // written before stores had versions
        if (has_tables && version != kStoreVersion) {
            std::string error =
                "the verdict database " + path.string() + " has store version " +
                std::to_string(version) + ", and this kbench reads version " +
                std::to_string(kStoreVersion) +
                (version < kStoreVersion ? " (its keys leave out settings that decide verdicts, "
                                           "such as the phase limits)"
                                         : " (it was written by a newer kbench)");
            sqlite3_close(db_);
            db_ = nullptr;
            throw UsageError(error, "use another --run name (or --db), or delete " + path.string() +
                                        " to evaluate that run again");
        }
        exec(
            "CREATE TABLE IF NOT EXISTS verdicts ("
            " key TEXT PRIMARY KEY,"
            " level INTEGER NOT NULL, problem_id INTEGER NOT NULL, sample_id INTEGER NOT NULL,"
            " status TEXT NOT NULL, verdict TEXT NOT NULL,"
            " stored_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')))");
        exec(
            "CREATE TABLE IF NOT EXISTS attempts ("
            " key TEXT PRIMARY KEY, count INTEGER NOT NULL,"
            " last_started_at TEXT NOT NULL)");
        exec("CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)");
        exec(("PRAGMA user_version = " + std::to_string(kStoreVersion)).c_str());
    }
    ~SqliteStore() override { sqlite3_close(db_); }

    std::optional<StoredVerdict> find(const std::string& key) override {
        std::lock_guard<std::mutex> guard(mutex_);
        Statement s(db_,
                    "SELECT key, level, problem_id, sample_id, status, verdict, stored_at FROM "
                    "verdicts WHERE "
                    "key = ?");
        s.bind(1, key);
        if (!s.step()) return std::nullopt;
        return row(s);
    }

    void put(const StoredVerdict& v) override {
        std::lock_guard<std::mutex> guard(mutex_);
        Statement s(db_,
                    "INSERT INTO verdicts (key, level, problem_id, sample_id, status, verdict)"
                    " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(key) DO UPDATE SET"
                    " status = excluded.status, verdict = excluded.verdict,"
                    " stored_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')");
        s.bind(1, v.key).bind(2, v.level).bind(3, v.problem_id).bind(4, v.sample_id);
        s.bind(5, v.status).bind(6, dump_text(v.verdict));
        s.step();
    }

    std::vector<StoredVerdict> all() override {
        std::lock_guard<std::mutex> guard(mutex_);
        Statement s(
            db_,
            "SELECT key, level, problem_id, sample_id, status, verdict, stored_at FROM verdicts"
            " ORDER BY level, problem_id, sample_id, key");
        std::vector<StoredVerdict> out;
        while (s.step()) out.push_back(row(s));
        return out;
    }

    int begin_attempt(const std::string& key) override {
        std::lock_guard<std::mutex> guard(mutex_);
        Statement s(db_,
                    "INSERT INTO attempts (key, count, last_started_at)"
                    " VALUES (?, 1, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))"
                    " ON CONFLICT(key) DO UPDATE SET count = count + 1,"
                    " last_started_at = excluded.last_started_at RETURNING count");
        s.bind(1, key);
        int count = s.step() ? s.integer(0) : 0;
        while (s.step()) {
        }
        return count;
    }

    int attempts(const std::string& key) override {
        std::lock_guard<std::mutex> guard(mutex_);
        Statement s(db_, "SELECT count FROM attempts WHERE key = ?");
        s.bind(1, key);
        return s.step() ? s.integer(0) : 0;
    }

    void cancel_attempt(const std::string& key) override {
        std::lock_guard<std::mutex> guard(mutex_);
        Statement(db_, "UPDATE attempts SET count = count - 1 WHERE key = ? AND count > 0")
            .bind(1, key)
            .step();
        Statement(db_, "DELETE FROM attempts WHERE key = ? AND count <= 0").bind(1, key).step();
    }

    std::optional<std::string> meta(const std::string& name) override {
        std::lock_guard<std::mutex> guard(mutex_);
        Statement s(db_, "SELECT value FROM meta WHERE name = ?");
        s.bind(1, name);
        if (!s.step()) return std::nullopt;
        return s.text(0);
    }

    void set_meta(const std::string& name, const std::string& value) override {
        std::lock_guard<std::mutex> guard(mutex_);
        Statement(db_,
                  "INSERT INTO meta (name, value) VALUES (?, ?)"
                  " ON CONFLICT(name) DO UPDATE SET value = excluded.value")
            .bind(1, name)
            .bind(2, value)
            .step();
    }

    std::vector<std::pair<std::string, std::string>> metas(const std::string& prefix) override {
        std::lock_guard<std::mutex> guard(mutex_);
        // substr, not LIKE: a prefix's '%' and '_' are its own.
        Statement s(db_, "SELECT name, value FROM meta WHERE substr(name, 1, ?) = ? ORDER BY name");
        s.bind(1, long(prefix.size())).bind(2, prefix);
        std::vector<std::pair<std::string, std::string>> out;
        while (s.step()) out.emplace_back(s.text(0), s.text(1));
        return out;
    }

    void erase_meta(const std::string& name) override {
        std::lock_guard<std::mutex> guard(mutex_);
        Statement(db_, "DELETE FROM meta WHERE name = ?").bind(1, name).step();
    }

  private:
    int user_version() {
        Statement s(db_, "PRAGMA user_version");
        return s.step() ? s.integer(0) : 0;
    }

    bool table_exists(const char* name) {
        Statement s(db_, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?");
        s.bind(1, std::string(name));
        return s.step();
    }

    void exec(const char* sql) {
        char* error = nullptr;
        if (sqlite3_exec(db_, sql, nullptr, nullptr, &error) != SQLITE_OK) {
            std::string text = error ? error : "?";
            sqlite3_free(error);
            throw sqlite_error(db_, text);
        }
    }

    static StoredVerdict row(const Statement& s) {
        return {s.text(0), s.integer(1),           s.integer(2), s.integer(3),
                s.text(4), json::parse(s.text(5)), s.text(6)};
    }

    sqlite3* db_ = nullptr;
    std::mutex mutex_;
};

}  // namespace

std::unique_ptr<VerdictStore> open_sqlite_store(const fs::path& path) {
    return std::make_unique<SqliteStore>(path);
}

}  // namespace kbench::store
