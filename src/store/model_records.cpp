#include "store/model_records.hpp"

#include <mutex>

#include "store/sqlite_statement.hpp"

namespace kbench::store {

struct ModelRecords::Database {
    sqlite3* handle = nullptr;
    std::mutex mutex;
    ~Database() { sqlite3_close(handle); }
};

namespace {

ModelCall call_row(const Statement& s) {
    ModelCall c;
    c.key = s.text(0);
    c.level = s.integer(1);
    c.problem_id = s.integer(2);
    c.sample_id = s.integer(3);
    c.turn = s.integer(4);
    c.provider = s.text(5);
    c.model = s.text(6);
    c.status = s.text(7);
    c.error = s.text(8);
    c.answer = json::parse(s.text(9));
    if (!s.null(10)) c.cost_usd = s.real(10);
    c.record = json::parse(s.text(11));
    c.stored_at = s.text(12);
    return c;
}

constexpr const char* kCallColumns =
    "key, level, problem_id, sample_id, turn, provider, model, status, error, answer, cost_usd, "
    "record, stored_at";

}  // namespace

ModelRecords::ModelRecords(const fs::path& path) : db_(std::make_unique<Database>()) {
    if (path.has_parent_path()) fs::create_directories(path.parent_path());
    if (sqlite3_open_v2(path.c_str(), &db_->handle, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE,
                        nullptr) != SQLITE_OK)
        throw UsageError("cannot open the run's database " + path.string() + ": " +
                             (db_->handle ? sqlite3_errmsg(db_->handle) : "out of memory"),
                         "check that its folder is writable");
    sqlite3_busy_timeout(db_->handle, 30000);
    exec_sql(db_->handle, "PRAGMA journal_mode=WAL");
    exec_sql(db_->handle, "PRAGMA synchronous=NORMAL");
    exec_sql(db_->handle,
             "CREATE TABLE IF NOT EXISTS model_calls ("
             " id INTEGER PRIMARY KEY AUTOINCREMENT, key TEXT NOT NULL,"
             " level INTEGER NOT NULL, problem_id INTEGER NOT NULL, sample_id INTEGER NOT NULL,"
             " turn INTEGER NOT NULL, provider TEXT NOT NULL, model TEXT NOT NULL,"
             " status TEXT NOT NULL, error TEXT NOT NULL, answer TEXT NOT NULL, cost_usd REAL,"
             " record TEXT NOT NULL,"
             " stored_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')))");
    exec_sql(db_->handle, "CREATE INDEX IF NOT EXISTS model_calls_key ON model_calls (key)");
    exec_sql(db_->handle,
             "CREATE TABLE IF NOT EXISTS turns ("
             " level INTEGER NOT NULL, problem_id INTEGER NOT NULL, sample_id INTEGER NOT NULL,"
             " turn INTEGER NOT NULL, call_key TEXT NOT NULL, candidate_path TEXT NOT NULL,"
             " candidate_sha256 TEXT NOT NULL, extraction_error TEXT NOT NULL,"
             " verdict_key TEXT NOT NULL, status TEXT NOT NULL, speedup REAL,"
             " PRIMARY KEY (level, problem_id, sample_id, turn))");
}

ModelRecords::~ModelRecords() = default;

void ModelRecords::claim(const std::string& command, const fs::path& run_dir) {
    std::lock_guard<std::mutex> guard(db_->mutex);
    exec_sql(db_->handle,
             "CREATE TABLE IF NOT EXISTS model_runs (name TEXT PRIMARY KEY, value TEXT NOT NULL)");
    Statement s(db_->handle, "SELECT value FROM model_runs WHERE name = 'command'");
    if (s.step()) {
        std::string made_by = s.text(0);
        if (made_by != command)
            throw UsageError("the run " + run_dir.string() + " was made by kbench " + made_by +
                                 ", and kbench " + command + " would mix its records with them",
                             "use another --run for kbench " + command);
        return;
    }
    Statement(db_->handle, "INSERT INTO model_runs (name, value) VALUES ('command', ?)")
        .bind(1, command)
        .step();
}

void ModelRecords::put_call(const ModelCall& c) {
    std::lock_guard<std::mutex> guard(db_->mutex);
    Statement s(db_->handle,
                "INSERT INTO model_calls (key, level, problem_id, sample_id, turn, provider, "
                "model, status, error, answer, cost_usd, record) VALUES "
                "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
    s.bind(1, c.key).bind(2, c.level).bind(3, c.problem_id).bind(4, c.sample_id).bind(5, c.turn);
    s.bind(6, c.provider).bind(7, c.model).bind(8, c.status).bind(9, c.error);
    // What a server sent may be cut inside a character: stored with U+FFFD, never refused.
    s.bind(10, c.answer.dump(-1, ' ', false, json::error_handler_t::replace));
    if (c.cost_usd)
        s.bind(11, *c.cost_usd);
    else
        s.bind_null(11);
    s.bind(12, c.record.dump(-1, ' ', false, json::error_handler_t::replace));
    s.step();
}

std::optional<ModelCall> ModelRecords::answered(const std::string& key) {
    std::lock_guard<std::mutex> guard(db_->mutex);
    std::string sql = std::string("SELECT ") + kCallColumns +
                      " FROM model_calls WHERE key = ? AND status = 'ok' ORDER BY id DESC LIMIT 1";
    Statement s(db_->handle, sql.c_str());
    s.bind(1, key);
    if (!s.step()) return std::nullopt;
    return call_row(s);
}

std::vector<ModelCall> ModelRecords::calls() {
    std::lock_guard<std::mutex> guard(db_->mutex);
    std::string sql = std::string("SELECT ") + kCallColumns + " FROM model_calls ORDER BY id";
    Statement s(db_->handle, sql.c_str());
    std::vector<ModelCall> out;
    while (s.step()) out.push_back(call_row(s));
    return out;
}

void ModelRecords::put_turn(const TurnRecord& t) {
    std::lock_guard<std::mutex> guard(db_->mutex);
    Statement s(db_->handle,
                "INSERT OR REPLACE INTO turns (level, problem_id, sample_id, turn, call_key, "
                "candidate_path, candidate_sha256, extraction_error, verdict_key, status, speedup)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
    s.bind(1, t.level).bind(2, t.problem_id).bind(3, t.sample_id).bind(4, t.turn);
    s.bind(5, t.call_key).bind(6, t.candidate_path).bind(7, t.candidate_sha256);
    s.bind(8, t.extraction_error).bind(9, t.verdict_key).bind(10, t.status);
    if (t.speedup)
        s.bind(11, *t.speedup);
    else
        s.bind_null(11);
    s.step();
}

std::vector<TurnRecord> ModelRecords::turns() {
    std::lock_guard<std::mutex> guard(db_->mutex);
    Statement s(db_->handle,
                "SELECT level, problem_id, sample_id, turn, call_key, candidate_path, "
                "candidate_sha256, extraction_error, verdict_key, status, speedup FROM turns "
                "ORDER BY level, problem_id, sample_id, turn");
    std::vector<TurnRecord> out;
    while (s.step()) {
        TurnRecord t{s.integer(0), s.integer(1), s.integer(2), s.integer(3), s.text(4),
                     s.text(5),    s.text(6),    s.text(7),    s.text(8),    s.text(9)};
        if (!s.null(10)) t.speedup = s.real(10);
        out.push_back(t);
    }
    return out;
}

}  // namespace kbench::store
