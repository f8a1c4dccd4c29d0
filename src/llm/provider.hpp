#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "llm/sse.hpp"

namespace kbench::llm {

using json = nlohmann::json;

// The wire formats kbench speaks: OpenAI's chat completions (OpenAI, Gemini's compatible
// endpoint, vLLM, SGLang, llama.cpp, Ollama, OpenRouter, Together, DeepSeek) and Anthropic's
// messages.
enum class Api { openai, anthropic };

// A provider by name: its wire format, where it listens, and the variable holding its key.
struct Provider {
    std::string name;
    Api api = Api::openai;
    std::string base_url;  // up to the version: https://api.openai.com/v1
    std::string key_env;   // empty: no key unless --api-key-env names one
    bool local = false;    // a server of the user's own: costs nothing, needs no key
    bool key_required = true;
};

const std::vector<Provider>& known_providers();

// The provider NAME with the user's base URL and key variable, if given; UsageError listing the
// known names for an unknown one. "openai-compatible" takes any server (a base URL is needed).
Provider find_provider(const std::string& name, const std::string& base_url = {},
                       const std::string& key_env = {});

struct Message {
    std::string role;  // "user" or "assistant"
    std::string content;
};

// What kbench asks a model, in its own terms.
struct ChatRequest {
    std::string model;
    std::string system;  // empty: none
    std::vector<Message> messages;
    std::optional<double> temperature;
    int max_tokens = 16384;
    std::optional<int> thinking_budget;           // Anthropic's extended thinking, tokens
    std::optional<std::string> reasoning_effort;  // OpenAI's reasoning models: low|medium|high
    bool stream = true;
};

// The model's answer, its thinking kept apart.
struct ChatAnswer {
    std::string text;
    std::string reasoning;
    std::string finish_reason;
    long input_tokens = 0;
    long output_tokens = 0;
    std::string model;  // as the server named it

    json to_json() const;
    static ChatAnswer from_json(const json& j);
};

// A response kbench cannot use; retryable when asking again may help (a 429, a 5xx, a cut
// stream), not when the request itself is wrong (400, 401, 404).
class ProviderError : public std::runtime_error {
  public:
    ProviderError(const std::string& what, bool retryable)
        : std::runtime_error(what), retryable_(retryable) {}
    bool retryable() const { return retryable_; }

  private:
    bool retryable_;
};

// The endpoint, the body and the headers (the key among them) of a request.
std::string endpoint(const Provider& provider);
json wire_body(const Provider& provider, const ChatRequest& request);
std::vector<std::string> wire_headers(const Provider& provider, const std::string& key);

// A whole JSON response; ProviderError when it is malformed or holds an error.
ChatAnswer parse_answer(Api api, const std::string& body);

// The message an error response carries (the body itself, cut, when it has none).
std::string error_message(const std::string& body);

// A streamed response, event by event.
class StreamReader {
  public:
    explicit StreamReader(Api api) : api_(api) {}
    // ProviderError on an event that is not JSON or that reports an error.
    void add(const SseEvent& event);
    bool finished() const { return finished_; }
    // The answer so far; ProviderError when the stream ended before its end.
    ChatAnswer answer(bool require_end = true) const;
    std::size_t events() const { return events_; }

  private:
    void add_openai(const json& chunk);
    void add_anthropic(const std::string& type, const json& event);

    Api api_;
    ChatAnswer answer_;
    bool finished_ = false;
    bool saw_finish_reason_ = false;
    std::size_t events_ = 0;
};

}  // namespace kbench::llm
