#include "orchestrator/run/eval_run.hpp"
#include "core/fields.hpp"

#include <unistd.h>

#include <algorithm>
#include <iostream>
#include <map>
#include <mutex>
#include <set>
#include <tuple>

#include "core/error.hpp"
#include "orchestrator/engine/evaluator.hpp"
#include "orchestrator/run/interruption.hpp"

namespace kbench::orchestrator {
namespace {

fs::path writable_folder(const fs::path& dir) {
    std::error_code error;
    fs::create_directories(dir, error);
    if (error || ::access(dir.c_str(), W_OK) != 0)
        throw UsageError("cannot write the run folder " + dir.string() + ": " +
                             (error ? error.message() : std::string("permission denied")),
                         "pass --runs-dir (or --run) to a folder you can write");
    return dir;
}

}  // namespace

EvalRun::EvalRun(const fs::path& run_dir, const std::optional<fs::path>& db,
                 const CheckConfig& settings, std::vector<EvalItem> items, bool force)
    : dir_(writable_folder(run_dir)), settings_(settings), items_(std::move(items)) {
    require_free_space(dir_, "the run's folder", "--runs-dir (or --run)");
    lock_ = std::make_unique<store::RunLock>(dir_);
    store_ = store::open_sqlite_store(db ? *db : dir_ / "kbench.db");
    // A run keeps the settings it was made with: other settings are another run.
    if (auto before = store_->meta("config")) {
        CheckConfig earlier = CheckConfig::from_json(json::parse(*before));
        auto differences = earlier.differences(settings_);
        if (!differences.empty()) {
            std::string fields;
            for (const auto& d : differences) fields += (fields.empty() ? "" : ", ") + d;
            throw UsageError("the run " + dir_.string() +
                                 " was made with other settings (they differ in " + fields + ")",
                             "use another --run name for these settings, or the run's own");
        }
    } else {
        store_->set_meta("config", dump_text(settings_.to_json()));
    }
    std::vector<ItemRecord> records;
    std::vector<std::optional<store::StoredVerdict>> found;
    for (const auto& item : items_) {
        ItemRecord r;
        found.push_back(store_->find(item.key));
        if (found.back()) r.status = found.back()->status;
        r.attempts = store_->attempts(item.key);
        records.push_back(r);
    }
    plan_ = plan_run(records, force);
    for (std::size_t i : plan_.done) done_.push_back(std::move(*found[i]));
}

EvalRun::~EvalRun() = default;

void EvalRun::record_selection(const std::vector<report::Unanswered>& unanswered) {
    json before = json::object();
    if (auto text = store_->meta("selection")) before = json::parse(*text, nullptr, false);
    if (!before.is_object()) before = json::object();
    std::map<std::pair<int, int>, json> problems;
    std::map<std::string, json> items;  // by level/problem/sample/key
    std::map<std::pair<int, int>, json> missing;
    for (const auto& p : before.value("problems", json::array()))
        problems[{p.value("level", 0), p.value("id", 0)}] = p;
    for (const auto& i : before.value("items", json::array())) items[dump_text(i)] = i;
    for (const auto& u : before.value("unanswered", json::array()))
        missing[{u.value("level", 0), u.value("id", 0)}] = u;
    for (const auto& item : items_) {
        const auto& p = item.problem;
        problems[{p.level, p.id}] = {{"level", p.level}, {"id", p.id}, {"name", p.name}};
        json i = {{"key", item.key},
                  {"level", p.level},
                  {"id", p.id},
                  {"sample_id", item.candidate.sample_id},
                  {"path", candidate_spec(item).path.string()}};
        items[dump_text(i)] = i;
        missing.erase({p.level, p.id});
    }
    std::set<std::pair<int, int>> answered;
    for (const auto& [text, i] : items) answered.insert({i.value("level", 0), i.value("id", 0)});
    for (const auto& u : unanswered) {
        problems[{u.level, u.id}] = {{"level", u.level}, {"id", u.id}, {"name", u.name}};
        if (!answered.count({u.level, u.id}))
            missing[{u.level, u.id}] = {
                {"level", u.level}, {"id", u.id}, {"name", u.name}, {"why", u.why}};
    }
    json out = {
        {"problems", json::array()}, {"items", json::array()}, {"unanswered", json::array()}};
    for (const auto& [at, p] : problems) out["problems"].push_back(p);
    for (const auto& [text, i] : items) out["items"].push_back(i);
    for (const auto& [at, u] : missing) out["unanswered"].push_back(u);
    store_->set_meta("selection", dump_text(out));
}

RunResults load_run_results(store::VerdictStore& store) {
    RunResults r;
    if (auto config = store.meta("config")) r.config = json::parse(*config, nullptr, false);
    json selection;
    if (auto text = store.meta("selection")) selection = json::parse(*text, nullptr, false);
    if (!selection.is_object()) {
        for (const auto& stored : store.all()) {
            Verdict v = Verdict::from_json(stored.verdict);
            v.problem.level = stored.level;
            v.problem.id = stored.problem_id;
            v.candidate.sample_id = stored.sample_id;
            r.verdicts.push_back(std::move(v));
        }
        std::set<std::pair<int, int>> seen;
        for (const auto& v : r.verdicts)
            if (seen.insert({*v.problem.level, *v.problem.id}).second)
                r.problems.push_back({*v.problem.level, *v.problem.id, v.problem.name});
        std::sort(r.problems.begin(), r.problems.end(), [](const auto& a, const auto& b) {
            return std::tie(a.level, a.id) < std::tie(b.level, b.id);
        });
        return r;
    }
    r.has_selection = true;
    std::map<std::pair<int, int>, std::string> names;
    for (const auto& p : selection.value("problems", json::array())) {
        r.problems.push_back({p.value("level", 0), p.value("id", 0), p.value("name", "")});
        names[{p.value("level", 0), p.value("id", 0)}] = p.value("name", "");
    }
    for (const auto& i : selection.value("items", json::array())) {
        auto stored = store.find(i.value("key", ""));
        if (!stored) {
            ++r.not_evaluated;
            continue;
        }
        Verdict v = Verdict::from_json(stored->verdict);
        v.problem.level = i.value("level", 0);
        v.problem.id = i.value("id", 0);
        v.problem.name = names[{*v.problem.level, *v.problem.id}];
        if (i.contains("sample_id") && i["sample_id"].is_number())
            v.candidate.sample_id = i["sample_id"].get<int>();
        v.candidate.path = i.value("path", v.candidate.path);
        r.verdicts.push_back(std::move(v));
    }
    for (const auto& u : selection.value("unanswered", json::array()))
        r.unanswered.push_back(
            {u.value("level", 0), u.value("id", 0), u.value("name", ""), u.value("why", "")});
    return r;
}

// Items with the same code (two samples alike, two problems alike) share a key and a verdict;
// each reports under its own name.
Verdict EvalRun::verdict_of(const store::StoredVerdict& stored, const EvalItem& item) const {
    Verdict v = Verdict::from_json(stored.verdict);
    v.problem.level = item.problem.level;
    v.problem.id = item.problem.id;
    v.problem.name = item.problem.name;
    v.candidate.sample_id = item.candidate.sample_id;
    v.candidate.path = candidate_spec(item).path.string();
    return v;
}

void EvalRun::record(const EvalItem& item, const Verdict& v, report::Reporter& out) {
    std::lock_guard<std::mutex> guard(record_mutex_);
    if (InterruptGuard::interrupted()) return;  // its workers were killed under it
    store_->put({item.key, item.candidate.level, item.candidate.problem_id,
                 item.candidate.sample_id, std::string(to_string(v.status)), v.to_json()});
    std::erase(in_flight_, item.key);
    out.verdict(v);
}

// The whole run, as score reads it (every selection it was evaluated with), not only this
// command's: the files written from it and the summary agree with kbench score --run.
void EvalRun::fill(report::RunOutcome& outcome, int signal) const {
    outcome.run_dir = dir_.string();
    RunResults all = load_run_results(*store_);
    outcome.verdicts = std::move(all.verdicts);
    outcome.problems = std::move(all.problems);
    outcome.unanswered = std::move(all.unanswered);
    outcome.not_evaluated = all.not_evaluated;
    outcome.signal = signal;
}

report::RunOutcome EvalRun::execute(const std::optional<EngineOptions>& engine,
                                    report::Reporter& out, report::RunOutcome outcome,
                                    const std::function<void(const std::string&)>& log) {
    for (std::size_t k = 0; k < plan_.done.size(); ++k)
        out.stored(verdict_of(done_[k], items_[plan_.done[k]]));

    // Verdicts are recorded one at a time; an interruption takes the same lock, so that what it
    // writes holds every verdict stored and no verdict is stored after it.
    InterruptGuard guard([&](int signal, Origin origin) {
        std::lock_guard<std::mutex> hold(record_mutex_);
        // An interruption from outside is no attempt of the candidates it stopped; one whose
        // sender kbench cannot vouch for counts, as an abnormal end does (a candidate that stops
        // runs that way gets its crash verdict all the same).
        if (origin == Origin::outside)
            for (const auto& key : in_flight_) store_->cancel_attempt(key);
        report::RunOutcome r = outcome;
        fill(r, signal);
        out.finish(r);
        if (origin != Origin::outside && !in_flight_.empty())
            std::cerr << "kbench: the signal's sender could not be verified (gone, queued, or "
                         "kbench was stopped meanwhile): the "
                      << in_flight_.size() << " evaluation(s) under way count as attempts\n";
        std::cerr << "kbench: interrupted; " << r.verdicts.size() << " verdict(s) kept in "
                  << dir_.string() << "; run the same command again to resume" << std::endl;
    });

    for (const auto& [index, attempts] : plan_.condemned) {
        const auto& item = items_[index];
        Verdict v = make_verdict(settings_, problem_spec(item.problem), candidate_spec(item), "");
        decide(v, condemned(attempts, true));
        record(item, v, out);
    }
    if (needs_engine()) {
        if (!engine) throw std::logic_error("EvalRun::execute: items left and no engine");
        auto stored = [&](const EvalItem& item, const Verdict& v, const std::string&) {
            record(item, v, out);
        };
        auto started = [&](const EvalItem& item) {
            std::lock_guard<std::mutex> hold(record_mutex_);
            if (InterruptGuard::interrupted()) return;
            store_->begin_attempt(item.key);
            in_flight_.push_back(item.key);
        };
        EvalEngine workers(*engine);  // started once: every pass below uses its workers
        try {
            for (std::size_t index : plan_.suspects) {
                if (log)
                    log(items_[index].candidate.source +
                        ": the last run stopped while evaluating it; evaluating it alone first");
                workers.run({items_[index]}, stored, started);
            }
            std::vector<EvalItem> rest;
            for (std::size_t index : plan_.rest) rest.push_back(items_[index]);
            workers.run(rest, stored, started);
        } catch (...) {
            // kbench's own failure (its store or its folders could not be written): the
            // evaluations under way are no attempts of their candidates, where the store can
            // still say so; what it holds is kept, and the same command resumes from there.
            std::lock_guard<std::mutex> hold(record_mutex_);
            for (const auto& key : in_flight_) try {
                    store_->cancel_attempt(key);
                } catch (const std::exception&) {
                }
            in_flight_.clear();
            throw;
        }
    }
    for (const auto& h : InterruptGuard::take_all_hostile())
        if (log)
            log("ignored a signal (" + std::to_string(h.signal) + ") from pid " +
                std::to_string(h.sender) + ", a process under kbench's own workers");

    std::lock_guard<std::mutex> hold(record_mutex_);
    fill(outcome, 0);
    out.finish(outcome);
    return outcome;
}

}  // namespace kbench::orchestrator
