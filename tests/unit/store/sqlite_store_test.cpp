#include <gtest/gtest.h>
#include <sqlite3.h>
#include <fstream>
#include <functional>
#include <regex>
#include <sstream>
#include "core/config.hpp"
#include "core/memory_plan.hpp"
#include "orchestrator/run/run_plan.hpp"
#include "report/kernelbench_results.hpp"
#include "report/progress.hpp"
#include "report/reporter.hpp"
#include "score/kernelbench_view.hpp"
#include "store/run_lock.hpp"

#include <thread>

#include "core/error.hpp"
#include "core/files.hpp"
#include "store/verdict_store.hpp"

namespace kbench::store {

TEST(SqliteStore, PutFindReplaceAndListInOrder) {
    fs::path dir = make_temp_dir("kbench-test-store-");
    {
        auto store = open_sqlite_store(dir / "runs" / "kbench.db");
        EXPECT_FALSE(store->find("k1"));
        store->put({"k2", 1, 19, 1, "incorrect", {{"status", "incorrect"}}});
        store->put({"k1", 1, 19, 0, "correct", {{"status", "correct"}, {"speedup", 1.5}}});
        store->put({"k3", 1, 2, 0, "crash", {{"status", "crash"}}});
        auto found = store->find("k1");
        ASSERT_TRUE(found);
        EXPECT_EQ(found->status, "correct");
        EXPECT_EQ(found->verdict["speedup"], 1.5);
        EXPECT_FALSE(found->stored_at.empty());
        store->put({"k2", 1, 19, 1, "correct", {{"status", "correct"}}});  // same key: replaced
        auto all = store->all();
        ASSERT_EQ(all.size(), 3u);
        EXPECT_EQ(all[0].key, "k3");  // level, problem, sample order
        EXPECT_EQ(all[1].key, "k1");
        EXPECT_EQ(all[2].status, "correct");
    }
    // Durable: a new connection sees everything.
    auto again = open_sqlite_store(dir / "runs" / "kbench.db");
    EXPECT_EQ(again->all().size(), 3u);
    fs::remove_all(dir);
}

// What a candidate prints lands in its verdict's log, in any bytes: kept, never a crash.
TEST(SqliteStore, BytesThatAreNotUtf8AreKeptAsReplacementCharacters) {
    fs::path dir = make_temp_dir("kbench-test-store-");
    auto store = open_sqlite_store(dir / "kbench.db");
    store->put({"k", 1, 19, 0, "runtime_error", {{"log", std::string("a\xff\xfe\xc3(b")}}});
    auto found = store->find("k");
    ASSERT_TRUE(found);
    std::string log = found->verdict["log"];
    EXPECT_EQ(log.front(), 'a');
    EXPECT_EQ(log.back(), 'b');
    EXPECT_NE(log.find("\xef\xbf\xbd"), std::string::npos) << log;
    fs::remove_all(dir);
}

TEST(SqliteStore, AttemptsAreCountedDurablyPerKey) {
    fs::path dir = make_temp_dir("kbench-test-store-");
    {
        auto store = open_sqlite_store(dir / "kbench.db");
        EXPECT_EQ(store->attempts("k1"), 0);
        EXPECT_EQ(store->begin_attempt("k1"), 1);
        EXPECT_EQ(store->begin_attempt("k1"), 2);
        EXPECT_EQ(store->begin_attempt("k2"), 1);
        EXPECT_EQ(store->attempts("k1"), 2);
    }
    auto again = open_sqlite_store(dir / "kbench.db");
    EXPECT_EQ(again->attempts("k1"), 2);
    EXPECT_EQ(again->attempts("k2"), 1);
    EXPECT_EQ(again->begin_attempt("k1"), 3);
    fs::remove_all(dir);
}

TEST(SqliteStore, SafeFromSeveralThreads) {
    fs::path dir = make_temp_dir("kbench-test-store-");
    auto store = open_sqlite_store(dir / "kbench.db");
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
        threads.emplace_back([&, t] {
            for (int i = 0; i < 25; ++i)
                store->put({std::to_string(t) + "-" + std::to_string(i), 1, t, i, "correct",
                            json::object()});
        });
    for (auto& t : threads) t.join();
    EXPECT_EQ(store->all().size(), 100u);
    fs::remove_all(dir);
}

TEST(SqliteStore, UnwritableFolderSaysWhatToDo) {
    try {
        open_sqlite_store("/proc/kbench-cannot-write/kbench.db");
        FAIL() << "expected an error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("/proc/kbench-cannot-write"), std::string::npos);
    } catch (const std::exception& e) {
        // create_directories refuses first; still an error that names the path.
        EXPECT_NE(std::string(e.what()).find("kbench-cannot-write"), std::string::npos);
    }
}

}  // namespace kbench::store

namespace kbench {
namespace {

using orchestrator::ItemRecord;

TEST(SqliteStore, InterruptedAttemptsAreTakenBackAndTheRunKeepsItsRecords) {
    fs::path dir = make_temp_dir("kbench-test-store-");
    auto store = store::open_sqlite_store(dir / "kbench.db");
    EXPECT_EQ(store->begin_attempt("k"), 1);
    EXPECT_EQ(store->begin_attempt("k"), 2);
    store->cancel_attempt("k");
    EXPECT_EQ(store->attempts("k"), 1);
    store->cancel_attempt("k");
    store->cancel_attempt("k");  // never below zero
    EXPECT_EQ(store->attempts("k"), 0);
    EXPECT_FALSE(store->meta("config"));
    store->set_meta("config", "{}");
    store->set_meta("config", "{\"a\":1}");
    EXPECT_EQ(store->meta("config").value_or(""), "{\"a\":1}");
    fs::remove_all(dir);
}

TEST(SqliteStore, RecordsByPrefixSurviveAReopenUntilErased) {
    fs::path dir = make_temp_dir("kbench-test-store-");
    {
        auto store = store::open_sqlite_store(dir / "kbench.db");
        store->set_meta("pending:b", "2");
        store->set_meta("pending:a", "1");
        store->set_meta("pending%x", "not a match: % is the prefix's own");
        store->set_meta("config", "{}");
    }
    auto store = store::open_sqlite_store(dir / "kbench.db");
    using Rows = std::vector<std::pair<std::string, std::string>>;
    EXPECT_EQ(store->metas("pending:"), (Rows{{"pending:a", "1"}, {"pending:b", "2"}}));
    store->erase_meta("pending:a");
    store->erase_meta("pending:none");
    EXPECT_EQ(store->metas("pending:"), (Rows{{"pending:b", "2"}}));
    EXPECT_EQ(store->metas("pending%").size(), 1u);
    EXPECT_EQ(store->meta("config").value_or(""), "{}");
    fs::remove_all(dir);
}

TEST(SqliteStore, AStoreOfAnotherVersionIsRefusedWithWhatToDo) {
    fs::path dir = make_temp_dir("kbench-test-store-");
    fs::path db = dir / "old.db";
    sqlite3* handle = nullptr;
    ASSERT_EQ(sqlite3_open(db.c_str(), &handle), SQLITE_OK);
    // What kbench wrote before stores had versions.
    sqlite3_exec(handle,
                 "CREATE TABLE verdicts (key TEXT PRIMARY KEY, level INTEGER, problem_id INTEGER,"
                 " sample_id INTEGER, status TEXT, verdict TEXT, stored_at TEXT)",
                 nullptr, nullptr, nullptr);
    sqlite3_close(handle);
    try {
        store::open_sqlite_store(db);
        FAIL() << "an unversioned store was opened";
    } catch (const UsageError& e) {
        EXPECT_NE(std::string(e.what()).find("has store version 1"), std::string::npos) << e.what();
        EXPECT_NE(e.hint().find("delete " + db.string()), std::string::npos) << e.hint();
    }
    ASSERT_EQ(sqlite3_open(db.c_str(), &handle), SQLITE_OK);
    sqlite3_exec(handle, "PRAGMA user_version = 99", nullptr, nullptr, nullptr);
    sqlite3_close(handle);
    EXPECT_THROW(store::open_sqlite_store(db), UsageError);
    fs::remove_all(dir);
}

}  // namespace
}  // namespace kbench
