#pragma once

// A prepared SQLite statement that finalizes itself; errors are InfraError with SQLite's words.
#include <sqlite3.h>

#include <string>

#include "core/error.hpp"

namespace kbench::store {

// SQLite's failure as kbench's error; one of a full disk or of the files says what to do.
inline InfraError sqlite_error(sqlite3* db, const std::string& text) {
    int code = sqlite3_extended_errcode(db) & 0xff;
    std::string hint;
    if (code == SQLITE_FULL || code == SQLITE_IOERR || code == SQLITE_READONLY)
        hint =
            "free space (df -h) on the filesystem of the run's folder, then run the same "
            "command again: every verdict stored before this failure is kept, and the run "
            "resumes from there";
    return InfraError("SQLite: " + text, hint);
}

class Statement {
  public:
    Statement(sqlite3* db, const char* sql) : db_(db) {
        if (sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr) != SQLITE_OK)
            throw sqlite_error(db, sqlite3_errmsg(db));
    }
    ~Statement() { sqlite3_finalize(stmt_); }
    Statement(const Statement&) = delete;
    Statement& operator=(const Statement&) = delete;

    Statement& bind(int index, const std::string& text) {
        sqlite3_bind_text(stmt_, index, text.c_str(), int(text.size()), SQLITE_TRANSIENT);
        return *this;
    }
    Statement& bind(int index, int value) {
        sqlite3_bind_int(stmt_, index, value);
        return *this;
    }
    Statement& bind(int index, long value) {
        sqlite3_bind_int64(stmt_, index, value);
        return *this;
    }
    Statement& bind(int index, double value) {
        sqlite3_bind_double(stmt_, index, value);
        return *this;
    }
    Statement& bind_null(int index) {
        sqlite3_bind_null(stmt_, index);
        return *this;
    }
    bool step() {
        int rc = sqlite3_step(stmt_);
        if (rc == SQLITE_ROW) return true;
        if (rc == SQLITE_DONE) return false;
        throw sqlite_error(db_, sqlite3_errmsg(db_));
    }
    std::string text(int column) const {
        auto* p = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, column));
        return p ? std::string(p, std::size_t(sqlite3_column_bytes(stmt_, column))) : std::string();
    }
    int integer(int column) const { return sqlite3_column_int(stmt_, column); }
    long integer64(int column) const { return long(sqlite3_column_int64(stmt_, column)); }
    double real(int column) const { return sqlite3_column_double(stmt_, column); }
    bool null(int column) const { return sqlite3_column_type(stmt_, column) == SQLITE_NULL; }

  private:
    sqlite3* db_;
    sqlite3_stmt* stmt_ = nullptr;
};

// Runs SQL without results.
inline void exec_sql(sqlite3* db, const char* sql) {
    char* error = nullptr;
    if (sqlite3_exec(db, sql, nullptr, nullptr, &error) != SQLITE_OK) {
        std::string text = error ? error : "?";
        sqlite3_free(error);
        throw sqlite_error(db, text);
    }
}

}  // namespace kbench::store
