#include "service/evaluation_service.hpp"

#include <algorithm>
#include <set>
#include <sstream>

#include "core/error.hpp"

namespace kbench::service {
namespace {

constexpr const char* kPending = "pending:";

bool masked(const json& verdict) {
    return verdict.value("masked", false);
}

}  // namespace

std::string_view to_string(State state) {
    switch (state) {
        case State::queued:
            return "queued";
        case State::running:
            return "running";
        case State::done:
            return "done";
    }
    return "queued";
}

json item_to_json(const orchestrator::EvalItem& item) {
    const dataset::Problem& p = item.problem;
    const dataset::Candidate& c = item.candidate;
    return {{"problem",
             {{"level", p.level},
              {"id", p.id},
              {"name", p.name},
              {"code", p.code},
              {"source", p.source}}},
            {"candidate", {{"sample_id", c.sample_id}, {"code", c.code}, {"source", c.source}}},
            {"backend", std::string(to_string(item.backend))},
            {"key", item.key}};
}

orchestrator::EvalItem item_from_json(const json& j) {
    const json& p = j.at("problem");
    const json& c = j.at("candidate");
    orchestrator::EvalItem item;
    item.problem = dataset::make_problem(p.at("level"), p.at("id"), p.at("name"), p.at("code"),
                                         p.at("source"));
    item.candidate = dataset::make_candidate(item.problem.level, item.problem.id, c.at("sample_id"),
                                             c.at("code"), c.at("source"));
    item.backend = parse_backend(j.at("backend").get<std::string>());
    item.key = j.at("key");
    return item;
}

EvaluationService::EvaluationService(orchestrator::EngineOptions engine,
                                     std::unique_ptr<store::VerdictStore> store,
                                     ServiceOptions options)
    : store_(std::move(store)), options_(options) {
    engine_ = std::make_unique<orchestrator::EvalEngine>(std::move(engine));
    resume_pending();
    runner_ = std::thread([this] {
        try {
            engine_->run(
                feed_,
                [this](const orchestrator::EvalItem& item, const Verdict& v,
                       const std::string& device) { finished(item, v, device); },
                [this](const orchestrator::EvalItem& item) { started(item); });
        } catch (const std::exception& e) {
            std::lock_guard<std::mutex> hold(mutex_);
            engine_error_ = e.what();
            stopped_ = true;
            changed_.notify_all();
        }
    });
}

EvaluationService::~EvaluationService() {
    stop();
    if (runner_.joinable()) runner_.join();
}

void EvaluationService::stop() {
    {
        std::lock_guard<std::mutex> hold(mutex_);
        stopped_ = true;
        changed_.notify_all();
    }
    feed_.close();
}

void EvaluationService::resume_pending() {
    // What an earlier service over this store acknowledged and did not finish.
    for (const auto& [name, text] : store_->metas(kPending)) {
        std::string key = name.substr(std::string(kPending).size());
        if (store_->find(key)) {
            store_->erase_meta(name);
            continue;
        }
        orchestrator::EvalItem item = item_from_json(json::parse(text));
        // Queued by a server of other settings: its key would hold a verdict of these.
        if (orchestrator::item_key(item.problem, item.candidate, item.backend, options_.config) !=
            key) {
            ++other_settings_;
            continue;
        }
        {
            std::lock_guard<std::mutex> hold(mutex_);
            entries_[key] = Entry{};
            ++queued_;
        }
        feed_.push(std::move(item));
    }
}

std::vector<EvaluationService::Submitted> EvaluationService::submit(
    std::vector<orchestrator::EvalItem> items) {
    // Stored by this service before, or by a kbench eval with the same settings: looked up
    // first, so that what follows is decided under one lock.
    std::vector<std::optional<store::StoredVerdict>> stored;
    for (const auto& item : items) stored.push_back(store_->find(item.key));
    std::vector<Submitted> out;
    std::vector<orchestrator::EvalItem> fresh;
    {
        std::lock_guard<std::mutex> hold(mutex_);
        if (stopped_)
            throw InfraError("kbench serve is stopping" +
                             (engine_error_.empty() ? "" : ": " + engine_error_));
        std::set<std::string> taken;
        for (std::size_t i = 0; i < items.size(); ++i) {
            const std::string& id = items[i].key;
            if (auto it = entries_.find(id); it != entries_.end()) {
                out.push_back({id, it->second.state});
            } else if (taken.count(id)) {
                out.push_back({id, State::queued});
            } else if (!stored[i]) {
                taken.insert(id);
                out.push_back({id, State::queued});
                fresh.push_back(items[i]);
            } else {
                out.push_back({id, State::done});
            }
        }
        if (queued_ + fresh.size() > options_.queue_limit)
            throw QueueFull(queued_, options_.queue_limit);
        for (std::size_t i = 0; i < items.size(); ++i)
            if (stored[i] && !entries_.count(items[i].key)) {
                Entry e;
                e.state = State::done;
                e.verdict = stored[i]->verdict;
                entries_[items[i].key] = e;
            }
        for (const auto& item : fresh) {
            entries_[item.key] = Entry{};
            ++queued_;
        }
    }
    // Durable before it is acknowledged: a restart takes it up again.
    for (auto& item : fresh) {
        store_->set_meta(kPending + item.key, item_to_json(item).dump());
        feed_.push(std::move(item));
    }
    return out;
}

void EvaluationService::started(const orchestrator::EvalItem& item) {
    std::lock_guard<std::mutex> hold(mutex_);
    Entry& e = entries_[item.key];
    if (e.state == State::running) return;  // again, after a lost device gave it back
    if (queued_ > 0) --queued_;
    e.state = State::running;
    e.started = Clock::now();
    ++running_;
    changed_.notify_all();
}

void EvaluationService::finished(const orchestrator::EvalItem& item, const Verdict& verdict,
                                 const std::string& device) {
    json v = verdict.to_json();
    store::StoredVerdict stored{item.key,
                                item.problem.level,
                                item.problem.id,
                                item.candidate.sample_id,
                                v.value("status", ""),
                                v,
                                ""};
    store_->put(stored);
    store_->erase_meta(kPending + item.key);
    std::lock_guard<std::mutex> hold(mutex_);
    Entry& e = entries_[item.key];
    auto now = Clock::now();
    if (e.state == State::running) {
        if (running_ > 0) --running_;
        busy_s_[device] += std::chrono::duration<double>(now - e.started).count();
    } else if (e.state == State::queued && queued_ > 0) {
        --queued_;
    }
    e.state = State::done;
    e.verdict = v;
    ++by_status_[stored.status];
    latencies_s_.push_back(std::chrono::duration<double>(now - e.submitted).count());
    if (latencies_s_.size() > 1000) latencies_s_.pop_front();
    events_.push_back(
        {{"seq", next_seq_++}, {"id", item.key}, {"verdict", v}, {"mask", masked(v)}});
    if (events_.size() > kEventsKept) events_.pop_front();
    changed_.notify_all();
}

json EvaluationService::describe(const std::string& id, const Entry& entry) const {
    json j = {{"id", id}, {"state", std::string(to_string(entry.state))}};
    if (entry.verdict) {
        j["verdict"] = *entry.verdict;
        j["mask"] = masked(*entry.verdict);
    }
    return j;
}

std::optional<json> EvaluationService::status(const std::string& id) {
    return wait(id, 0);
}

std::optional<json> EvaluationService::wait(const std::string& id, double seconds) {
    std::unique_lock<std::mutex> hold(mutex_);
    auto it = entries_.find(id);
    if (it == entries_.end()) {
        hold.unlock();
        auto stored = store_->find(id);
        if (!stored) return std::nullopt;
        hold.lock();
        Entry e;
        e.state = State::done;
        e.verdict = stored->verdict;
        it = entries_.emplace(id, e).first;
    }
    auto until = Clock::now() + std::chrono::milliseconds(long(std::max(0.0, seconds) * 1000));
    changed_.wait_until(hold, until, [&] { return it->second.state == State::done || stopped_; });
    return describe(id, it->second);
}

std::vector<json> EvaluationService::events_after(std::uint64_t after, double seconds) {
    std::unique_lock<std::mutex> hold(mutex_);
    auto until = Clock::now() + std::chrono::milliseconds(long(std::max(0.0, seconds) * 1000));
    changed_.wait_until(hold, until, [&] { return next_seq_ - 1 > after || stopped_; });
    std::vector<json> out;
    for (const json& e : events_)
        if (e.at("seq").get<std::uint64_t>() > after) out.push_back(e);
    return out;
}

std::uint64_t EvaluationService::last_event() const {
    std::lock_guard<std::mutex> hold(mutex_);
    return next_seq_ - 1;
}

json EvaluationService::health() const {
    std::lock_guard<std::mutex> hold(mutex_);
    json j = {{"ok", !stopped_},
              {"devices", engine_->devices()},
              {"queued", queued_},
              {"running", running_},
              {"queue_limit", options_.queue_limit},
              {"queued_under_other_settings", other_settings_}};
    if (!engine_error_.empty()) j["error"] = engine_error_;
    return j;
}

std::string EvaluationService::metrics() const {
    std::lock_guard<std::mutex> hold(mutex_);
    std::ostringstream m;
    m << "# HELP kbench_queue_depth Evaluations waiting for a device.\n"
      << "# TYPE kbench_queue_depth gauge\nkbench_queue_depth " << queued_ << "\n"
      << "# HELP kbench_running Evaluations under way.\n"
      << "# TYPE kbench_running gauge\nkbench_running " << running_ << "\n"
      << "# HELP kbench_queue_limit Evaluations the queue holds at most.\n"
      << "# TYPE kbench_queue_limit gauge\nkbench_queue_limit " << options_.queue_limit << "\n"
      << "# HELP kbench_verdicts_total Verdicts given, by status.\n"
      << "# TYPE kbench_verdicts_total counter\n";
    for (const auto& [status, n] : by_status_)
        m << "kbench_verdicts_total{status=\"" << status << "\"} " << n << "\n";
    m << "# HELP kbench_latency_seconds Submission to verdict, over the last 1000 verdicts.\n"
      << "# TYPE kbench_latency_seconds summary\n";
    std::vector<double> sorted(latencies_s_.begin(), latencies_s_.end());
    std::sort(sorted.begin(), sorted.end());
    for (double q : {0.5, 0.9, 0.99}) {
        double value = sorted.empty() ? 0.0 : sorted[std::size_t(q * double(sorted.size() - 1))];
        m << "kbench_latency_seconds{quantile=\"" << q << "\"} " << value << "\n";
    }
    double sum = 0;
    for (double s : sorted) sum += s;
    m << "kbench_latency_seconds_sum " << sum << "\nkbench_latency_seconds_count " << sorted.size()
      << "\n";
    m << "# HELP kbench_device_busy_share Share of the service's time each device evaluated.\n"
      << "# TYPE kbench_device_busy_share gauge\n";
    double up = std::chrono::duration<double>(Clock::now() - since_).count();
    for (const auto& [device, busy] : busy_s_)
        m << "kbench_device_busy_share{device=\"" << device << "\"} "
          << (up > 0 ? std::min(1.0, busy / up) : 0.0) << "\n";
    return m.str();
}

}  // namespace kbench::service
