#pragma once

#include <functional>
#include <mutex>
#include <optional>
#include <semaphore>
#include <string>

#include "llm/prices.hpp"
#include "llm/provider.hpp"

namespace kbench::llm {

// One request to a model and what came of it, as the run's store keeps it: never the key.
struct Exchange {
    std::string key;  // the cache key: the whole request (credentials aside) and its salt
    std::string url;
    json request;     // the body sent
    std::string raw;  // the last response as received (a stream's events as they came)
    ChatAnswer answer;
    bool ok = false;
    std::string error;         // why there is no answer, when !ok
    bool over_budget = false;  // not sent: the spending cap was reached
    bool cached = false;       // answered from the run's store, not paid again
    int attempts = 0;
    double seconds = 0;
    std::optional<double> cost_usd;     // nothing: no price known
    json attempts_log = json::array();  // each try: status, failure, error, seconds waited after
};

struct ClientOptions {
    Provider provider;
    std::string key;  // read from the environment, never written anywhere
    double timeout_s = 900;
    double idle_timeout_s = 180;
    double connect_timeout_s = 30;
    int max_attempts = 6;
    double backoff_base_s = 2;
    double backoff_max_s = 120;
    std::size_t max_response_bytes = 8u << 20;
    int concurrency = 4;
    std::optional<double> max_cost;  // US dollars for this run; no new request once reached
    PriceTable prices;
    std::function<void(const std::string&)> log;
    // Answers the run already holds, by cache key.
    std::function<std::optional<ChatAnswer>(const std::string& key)> cache;
    // Called as a request goes to the provider (not answered from the cache).
    std::function<void()> on_send;
};

// Asks a model over HTTP: at most `concurrency` requests at once, retried with exponential
// backoff and full jitter on 429, 5xx, dropped connections, timeouts and cut streams, honouring
// Retry-After; answers already in the run come from it; tokens and cost are counted.
class ModelClient {
  public:
    // UsageError when the provider needs a key and it is missing, or when a spending cap is asked
    // for a model without a price.
    explicit ModelClient(ClientOptions options);

    std::string cache_key(const ChatRequest& request, const std::string& salt) const;
    // Never throws for what the network or the provider did: the exchange says.
    Exchange ask(const ChatRequest& request, const std::string& salt, const std::string& label);

    struct Spend {
        double usd = 0;
        long input_tokens = 0;
        long output_tokens = 0;
        int requests = 0;  // answered by the provider in this run
        int cached = 0;    // answered from the run's store
        bool cost_known = true;
    };
    Spend spend() const;
    bool budget_spent() const;
    const Provider& provider() const { return options_.provider; }
    // Why the provider cannot be reached, once the run's first request found nothing listening
    // at its address (and no request had reached it before): every later request fails at once
    // with it, unsent. Empty while the provider can be reached.
    std::string unreachable() const;

  private:
    Exchange send(const ChatRequest& request, Exchange exchange, const std::string& label);
    std::string scrub(std::string text) const;
    bool holds_key(const std::string& text) const;
    bool reached() const;
    void note(const std::string& line) const;

    ClientOptions options_;
    std::counting_semaphore<1024> slots_;
    mutable std::mutex mutex_;
    Spend spend_;
    bool reached_ = false;     // a request got through to the provider's address
    std::string unreachable_;  // see unreachable()
};

// Keys this long or longer are taken out of everything kept; shorter ones are no secret.
constexpr std::size_t kScrubbedKeyLength = 12;

// The key of the provider from its variable (UsageError when a hosted provider has none).
std::string api_key(const Provider& provider);

}  // namespace kbench::llm
