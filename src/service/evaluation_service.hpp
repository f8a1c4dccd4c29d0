#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/config.hpp"
#include "orchestrator/engine/eval_engine.hpp"
#include "store/verdict_store.hpp"

namespace kbench::service {

using json = nlohmann::json;

// Where an evaluation stands.
enum class State { queued, running, done };
std::string_view to_string(State state);

// More evaluations than the queue holds: none of the request's were taken.
class QueueFull : public std::runtime_error {
  public:
    QueueFull(std::size_t depth, std::size_t limit)
        : std::runtime_error("the queue holds " + std::to_string(depth) + " of at most " +
                             std::to_string(limit) + " evaluations") {}
};

struct ServiceOptions {
    std::size_t queue_limit = 1000;  // evaluations waiting, at most
    CheckConfig config;              // the settings every evaluation's key is made with
};

// kbench as a long-lived service: one engine (judges warm, builders running, reference outputs
// reused across a problem's candidates) fed evaluations as they come. An evaluation's id is its
// store key (problem, candidate, backend and settings), so asking again for one gets the same
// evaluation, or its stored verdict at once. What is queued is written to the store before it
// is acknowledged, and taken up again when the service starts over the same store.
class EvaluationService {
  public:
    EvaluationService(orchestrator::EngineOptions engine,
                      std::unique_ptr<store::VerdictStore> store, ServiceOptions options);
    ~EvaluationService();  // stops taking evaluations, lets the one under way finish
    EvaluationService(const EvaluationService&) = delete;
    EvaluationService& operator=(const EvaluationService&) = delete;

    struct Submitted {
        std::string id;
        State state;
    };
    // All of items or none (QueueFull). Items must have their keys.
    std::vector<Submitted> submit(std::vector<orchestrator::EvalItem> items);

    // {"id", "state", "verdict" (once done), "mask" (the verdict's masked)}; nullopt: unknown id.
    std::optional<json> status(const std::string& id);
    // The same, once done or after seconds, whichever comes first.
    std::optional<json> wait(const std::string& id, double seconds);

    // Verdicts in the order they came, each {"seq", "id", "verdict", "mask"}: those after seq
    // `after`, waiting up to seconds for one. Only the last kEventsKept are kept.
    std::vector<json> events_after(std::uint64_t after, double seconds);
    std::uint64_t last_event() const;

    // Prometheus text: queue depth, evaluations under way, verdicts by status, latency
    // quantiles, each device's busy share.
    std::string metrics() const;
    json health() const;

    // Ends the engine's run: nothing more starts (waits for the evaluation under way).
    void stop();

    static constexpr std::size_t kEventsKept = 10000;

  private:
    using Clock = std::chrono::steady_clock;
    struct Entry {
        State state = State::queued;
        Clock::time_point submitted = Clock::now();
        Clock::time_point started;
        std::optional<json> verdict;
    };
    void started(const orchestrator::EvalItem& item);
    void finished(const orchestrator::EvalItem& item, const Verdict& verdict,
                  const std::string& device);
    json describe(const std::string& id, const Entry& entry) const;
    void resume_pending();

    std::unique_ptr<store::VerdictStore> store_;
    ServiceOptions options_;
    std::unique_ptr<orchestrator::EvalEngine> engine_;
    orchestrator::ItemFeed feed_;
    std::thread runner_;
    std::string engine_error_;  // why the engine's run ended early

    mutable std::mutex mutex_;
    std::condition_variable changed_;
    std::map<std::string, Entry> entries_;  // this service's evaluations, by id
    std::size_t queued_ = 0, running_ = 0;
    std::size_t other_settings_ = 0;  // queued by a server of other settings: left in the store
    std::deque<json> events_;
    std::uint64_t next_seq_ = 1;
    std::map<std::string, std::uint64_t> by_status_;
    std::deque<double> latencies_s_;        // submission to verdict, the last 1000
    std::map<std::string, double> busy_s_;  // by device
    Clock::time_point since_ = Clock::now();
    bool stopped_ = false;
};

// An item as the store keeps a queued one, and back.
json item_to_json(const orchestrator::EvalItem& item);
orchestrator::EvalItem item_from_json(const json& j);

}  // namespace kbench::service
