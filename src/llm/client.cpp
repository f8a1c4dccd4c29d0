#include "llm/client.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <random>
#include <thread>

#include "core/error.hpp"
#include "core/interrupted.hpp"
#include "core/sha256.hpp"
#include "llm/http.hpp"
#include "llm/sse.hpp"

namespace kbench::llm {
namespace {

std::string fixed(double value, int digits) {
    char text[64];
    std::snprintf(text, sizeof(text), "%.*f", digits, value);
    return text;
}

const char* failure_name(HttpFailure failure) {
    switch (failure) {
        case HttpFailure::none:
            return "none";
        case HttpFailure::connect:
            return "connect";
        case HttpFailure::timeout:
            return "timeout";
        case HttpFailure::dropped:
            return "dropped";
        case HttpFailure::too_large:
            return "too_large";
        case HttpFailure::other:
            return "other";
    }
    return "other";
}

bool retryable_status(int status) {
    return status == 408 || status == 409 || status == 425 || status == 429 || status >= 500;
}

// Sleeps, waking early when kbench is interrupted.
void pause(double seconds) {
    auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (std::chrono::steady_clock::now() < until && !interrupted())
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
}

double jitter(double ceiling) {
    thread_local std::mt19937_64 random{std::random_device{}()};
    return std::uniform_real_distribution<double>(0, ceiling)(random);
}

}  // namespace

std::string api_key(const Provider& provider) {
    const char* value = provider.key_env.empty() ? nullptr : std::getenv(provider.key_env.c_str());
    std::string key = value ? value : "";
    if (key.empty() && provider.key_required)
        throw UsageError(
            "the provider " + provider.name + " needs an API key, and " + provider.key_env +
                " is not set",
            "export " + provider.key_env + "=... (or name another variable with --api-key-env)");
    return key;
}

ModelClient::ModelClient(ClientOptions options)
    : options_(std::move(options)), slots_(std::clamp(options_.concurrency, 1, 1024)) {}

std::string ModelClient::cache_key(const ChatRequest& request, const std::string& salt) const {
    json body = wire_body(options_.provider, request);
    // Streaming or not, the answer is the same request's.
    body.erase("stream");
    body.erase("stream_options");
    std::string text = body.dump(-1, ' ', false, json::error_handler_t::replace);
    // The provider and the body, not the URL: the same model moved to another address (a local
    // server restarted on another port) answers the same request.
    return sha256_hex(options_.provider.name + "\n" + text + "\n" + salt);
}

bool ModelClient::holds_key(const std::string& text) const {
    return options_.key.size() >= kScrubbedKeyLength &&
           text.find(options_.key) != std::string::npos;
}

std::string ModelClient::scrub(std::string text) const {
    const std::string& key = options_.key;
    // Short keys (a local server's "dummy") are no secret, and would be words of the code.
    if (key.size() < kScrubbedKeyLength) return text;
    for (auto at = text.find(key); at != std::string::npos; at = text.find(key, at))
        text.replace(at, key.size(), "[key]");
    return text;
}

void ModelClient::note(const std::string& line) const {
    if (options_.log) options_.log(scrub(line));
}

ModelClient::Spend ModelClient::spend() const {
    std::lock_guard<std::mutex> guard(mutex_);
    return spend_;
}

std::string ModelClient::unreachable() const {
    std::lock_guard<std::mutex> guard(mutex_);
    return unreachable_;
}

bool ModelClient::reached() const {
    std::lock_guard<std::mutex> guard(mutex_);
    return reached_;
}

bool ModelClient::budget_spent() const {
    std::lock_guard<std::mutex> guard(mutex_);
    return options_.max_cost && spend_.usd >= *options_.max_cost;
}

Exchange ModelClient::ask(const ChatRequest& request, const std::string& salt,
                          const std::string& label) {
    Exchange exchange;
    exchange.key = cache_key(request, salt);
    exchange.url = endpoint(options_.provider);
    exchange.request = wire_body(options_.provider, request);
    if (options_.cache) {
        if (auto answer = options_.cache(exchange.key)) {
            exchange.answer = *answer;
            exchange.ok = true;
            exchange.cached = true;
            std::lock_guard<std::mutex> guard(mutex_);
            ++spend_.cached;
            return exchange;
        }
    }
    if (std::string why = unreachable(); !why.empty()) {
        exchange.error = why;
        return exchange;
    }
    if (budget_spent()) {
        exchange.over_budget = true;
        exchange.error =
            "not sent: the spending cap of $" + fixed(*options_.max_cost, 2) + " is reached";
        return exchange;
    }
    if (options_.on_send) options_.on_send();
    slots_.acquire();
    try {
        exchange = send(request, std::move(exchange), label);
    } catch (...) {
        slots_.release();
        throw;
    }
    slots_.release();
    return exchange;
}

Exchange ModelClient::send(const ChatRequest& request, Exchange exchange,
                           const std::string& label) {
    HttpRequest http;
    http.url = exchange.url;
    http.headers = wire_headers(options_.provider, options_.key);
    http.body = exchange.request.dump(-1, ' ', false, json::error_handler_t::replace);
    http.timeout_s = options_.timeout_s;
    http.idle_timeout_s = options_.idle_timeout_s;
    http.connect_timeout_s = options_.connect_timeout_s;
    http.max_bytes = options_.max_response_bytes;
    auto began = std::chrono::steady_clock::now();
    const int attempts = std::max(1, options_.max_attempts);
    for (int attempt = 1; attempt <= attempts; ++attempt) {
        exchange.attempts = attempt;
        SseParser parser;
        StreamReader reader(options_.provider.api);
        std::optional<ProviderError> stream_error;
        if (request.stream)
            http.on_data = [&](std::string_view piece) {
                if (stream_error) return;
                try {
                    for (const auto& event : parser.feed(piece)) reader.add(event);
                } catch (const ProviderError& e) {
                    stream_error = e;
                }
            };
        HttpResponse response = http_post(http);
        exchange.raw = scrub(response.body);
        std::string error;
        bool retry = false;
        double retry_after = -1;
        if (response.failure == HttpFailure::too_large) {
            error = response.error + " (--max-response-bytes): not asked again";
        } else if (response.failure == HttpFailure::connect && !reached()) {
            // Nothing listens there, and nothing ever did in this run: a server not started or
            // a wrong address, which no retry mends.
            error = "nothing answers at " + exchange.url + " (--provider " +
                    options_.provider.name + "): " + response.error + "; " +
                    (options_.provider.local
                         ? "start the server there, or pass --base-url with the address it "
                           "listens on"
                         : "check the machine's network, or pass --base-url");
            std::lock_guard<std::mutex> guard(mutex_);
            if (!reached_ && unreachable_.empty()) unreachable_ = error;
        } else if (response.failure != HttpFailure::none) {
            error = std::string(response.failure == HttpFailure::timeout ? "timed out: "
                                : response.failure == HttpFailure::connect
                                    ? "could not connect: "
                                    : "the connection failed: ") +
                    response.error;
            retry = true;
        } else if (response.status != 200) {
            error = "HTTP " + std::to_string(response.status) + ": " + error_message(response.body);
            if (holds_key(error_message(response.body)))
                exchange.raw = "[withheld: the response held the API key]";
            retry = retryable_status(response.status);
            retry_after = retry_after_seconds(response.headers);
        } else {
            try {
                // A server may answer a request for a stream with the whole response.
                auto type = response.headers.find("content-type");
                bool whole = type != response.headers.end() &&
                             type->second.rfind("application/json", 0) == 0;
                if (request.stream && !whole) {
                    for (const auto& event : parser.finish()) reader.add(event);
                    if (stream_error) throw *stream_error;
                    exchange.answer = reader.answer();
                } else {
                    exchange.answer = parse_answer(options_.provider.api, response.body);
                }
                // A server that echoes the key: its raw response may hold it in pieces or
                // escaped, where no search finds it; the decoded answer is kept, scrubbed.
                if (holds_key(exchange.answer.text) || holds_key(exchange.answer.reasoning) ||
                    holds_key(exchange.answer.finish_reason))
                    exchange.raw = "[withheld: the response held the API key]";
                exchange.answer.text = scrub(exchange.answer.text);
                exchange.answer.reasoning = scrub(exchange.answer.reasoning);
                if (exchange.answer.text.empty()) {
                    error =
                        "the model's answer is empty (finish reason: " +
                        (exchange.answer.finish_reason.empty() ? std::string("none")
                                                               : exchange.answer.finish_reason) +
                        ")";
                    if (exchange.answer.finish_reason == "length" ||
                        exchange.answer.finish_reason == "max_tokens")
                        error +=
                            "; its token budget ran out, perhaps in its reasoning: raise "
                            "--max-tokens";
                } else {
                    exchange.ok = true;
                }
            } catch (const ProviderError& e) {
                error = e.what();
                retry = e.retryable();
            }
        }
        if (response.failure != HttpFailure::connect) {
            std::lock_guard<std::mutex> guard(mutex_);
            reached_ = true;
        }
        json tried = {{"status", response.status},
                      {"failure", failure_name(response.failure)},
                      {"seconds", response.seconds}};
        if (!error.empty()) tried["error"] = scrub(error);
        if (exchange.ok || (error.empty() && !retry)) {
            exchange.attempts_log.push_back(tried);
            break;
        }
        exchange.error = scrub(error);
        if (!retry || attempt == attempts || interrupted()) {
            exchange.attempts_log.push_back(tried);
            break;
        }
        double ceiling =
            std::min(options_.backoff_max_s, options_.backoff_base_s * std::pow(2.0, attempt - 1));
        double wait = std::max(jitter(ceiling), std::min(retry_after, 600.0));
        tried["waited_s"] = wait;
        exchange.attempts_log.push_back(tried);
        note(label + ": " + exchange.error + "; asking again in " + fixed(wait, 1) +
             " s (attempt " + std::to_string(attempt + 1) + " of " + std::to_string(attempts) +
             ")");
        pause(wait);
    }
    exchange.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
    if (exchange.ok) exchange.error.clear();
    // Tokens the provider counted are paid for, answer usable or not.
    long input = exchange.answer.input_tokens, output = exchange.answer.output_tokens;
    exchange.cost_usd =
        options_.prices.cost(options_.provider, exchange.request.value("model", ""), input, output);
    std::lock_guard<std::mutex> guard(mutex_);
    spend_.input_tokens += input;
    spend_.output_tokens += output;
    if (exchange.ok) ++spend_.requests;
    if (exchange.cost_usd)
        spend_.usd += *exchange.cost_usd;
    else if (input + output > 0)
        spend_.cost_known = false;
    return exchange;
}

}  // namespace kbench::llm
