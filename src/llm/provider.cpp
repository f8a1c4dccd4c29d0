#include "llm/provider.hpp"

#include "core/error.hpp"

namespace kbench::llm {
namespace {

std::string cut(const std::string& text, std::size_t n = 300) {
    return text.size() <= n ? text : text.substr(0, n) + "...";
}

json parse_json(const std::string& body, const char* what) {
    try {
        return json::parse(body);
    } catch (const json::exception&) {
        // A body cut short or garbled on the way: asking again may help.
        throw ProviderError(std::string("the ") + what + " is not valid JSON: " + cut(body, 200),
                            true);
    }
}

std::string text_of(const json& value) {
    return value.is_string() ? value.get<std::string>() : std::string();
}

// An error object inside a response (some gateways send one with status 200).
void check_error(const json& j) {
    if (!j.is_object() || !j.contains("error") || j["error"].is_null()) return;
    const json& e = j["error"];
    std::string message = e.is_object() ? text_of(e.value("message", json())) : e.dump();
    std::string type = e.is_object() ? text_of(e.value("type", json())) : "";
    int code =
        e.is_object() && e.value("code", json()).is_number_integer() ? e["code"].get<int>() : 0;
    bool retryable = code == 429 || code >= 500 || type == "overloaded_error" ||
                     type == "rate_limit_error" || type == "api_error";
    throw ProviderError("the provider reported an error: " + (type.empty() ? "" : type + ": ") +
                            cut(message.empty() ? e.dump() : message),
                        retryable);
}

}  // namespace

const std::vector<Provider>& known_providers() {
    static const std::vector<Provider> providers = {
        {"openai", Api::openai, "https://api.openai.com/v1", "OPENAI_API_KEY", false},
        {"anthropic", Api::anthropic, "https://api.anthropic.com/v1", "ANTHROPIC_API_KEY", false},
        {"gemini", Api::openai, "https://generativelanguage.googleapis.com/v1beta/openai",
         "GEMINI_API_KEY", false},
        {"openrouter", Api::openai, "https://openrouter.ai/api/v1", "OPENROUTER_API_KEY", false},
        {"together", Api::openai, "https://api.together.xyz/v1", "TOGETHER_API_KEY", false},
        {"deepseek", Api::openai, "https://api.deepseek.com/v1", "DEEPSEEK_API_KEY", false},
        {"vllm", Api::openai, "http://localhost:8000/v1", "VLLM_API_KEY", true, false},
        {"sglang", Api::openai, "http://localhost:30000/v1", "SGLANG_API_KEY", true, false},
        {"llamacpp", Api::openai, "http://localhost:8080/v1", "LLAMA_API_KEY", true, false},
        {"ollama", Api::openai, "http://localhost:11434/v1", "OLLAMA_API_KEY", true, false},
        // Any server: no key is sent unless --api-key-env names one (a hosted provider's key
        // must not go to an address it does not own), and no price is known unless --prices
        // gives one.
        {"openai-compatible", Api::openai, "", "", false, false},
        {"anthropic-compatible", Api::anthropic, "", "", false, false},
    };
    return providers;
}

Provider find_provider(const std::string& name, const std::string& base_url,
                       const std::string& key_env) {
    for (Provider p : known_providers()) {
        if (p.name != name) continue;
        if (!base_url.empty()) p.base_url = base_url;
        while (!p.base_url.empty() && p.base_url.back() == '/') p.base_url.pop_back();
        if (p.base_url.empty())
            throw UsageError("the provider " + name + " needs a base URL",
                             "add --base-url http://HOST:PORT/v1");
        if (p.base_url.rfind("http://", 0) != 0 && p.base_url.rfind("https://", 0) != 0)
            throw UsageError("--base-url " + p.base_url + " is not an http:// or https:// URL",
                             "give the server's URL up to its version, like http://host:8000/v1");
        if (!key_env.empty()) {
            p.key_env = key_env;
            p.key_required = true;  // named by the user: it must be set
        }
        return p;
    }
    std::string names;
    for (const auto& p : known_providers()) names += (names.empty() ? "" : ", ") + p.name;
    throw UsageError("unknown provider '" + name + "'", "use one of " + names);
}

json ChatAnswer::to_json() const {
    return {{"text", text},
            {"reasoning", reasoning},
            {"finish_reason", finish_reason},
            {"input_tokens", input_tokens},
            {"output_tokens", output_tokens},
            {"model", model}};
}

ChatAnswer ChatAnswer::from_json(const json& j) {
    ChatAnswer a;
    a.text = j.value("text", "");
    a.reasoning = j.value("reasoning", "");
    a.finish_reason = j.value("finish_reason", "");
    a.input_tokens = j.value("input_tokens", 0L);
    a.output_tokens = j.value("output_tokens", 0L);
    a.model = j.value("model", "");
    return a;
}

std::string endpoint(const Provider& provider) {
    return provider.base_url + (provider.api == Api::openai ? "/chat/completions" : "/messages");
}

json wire_body(const Provider& provider, const ChatRequest& r) {
    json messages = json::array();
    if (provider.api == Api::openai && !r.system.empty())
        messages.push_back({{"role", "system"}, {"content", r.system}});
    for (const auto& m : r.messages) messages.push_back({{"role", m.role}, {"content", m.content}});
    json body = {{"model", r.model}, {"messages", messages}};
    if (provider.api == Api::openai) {
        // OpenAI's reasoning models take only max_completion_tokens; other servers max_tokens.
        body[provider.name == "openai" ? "max_completion_tokens" : "max_tokens"] = r.max_tokens;
        if (r.temperature) body["temperature"] = *r.temperature;
        if (r.reasoning_effort) body["reasoning_effort"] = *r.reasoning_effort;
        if (r.stream) {
            body["stream"] = true;
            body["stream_options"] = {{"include_usage", true}};
        }
        return body;
    }
    body["max_tokens"] = r.max_tokens;
    if (!r.system.empty()) body["system"] = r.system;
    if (r.thinking_budget)
        body["thinking"] = {{"type", "enabled"}, {"budget_tokens", *r.thinking_budget}};
    else if (r.temperature)  // with thinking, the temperature must stay at its default
        body["temperature"] = *r.temperature;
    if (r.stream) body["stream"] = true;
    return body;
}

std::vector<std::string> wire_headers(const Provider& provider, const std::string& key) {
    std::vector<std::string> headers = {"Content-Type: application/json"};
    if (provider.api == Api::anthropic) {
        headers.push_back("anthropic-version: 2023-06-01");
        if (!key.empty()) headers.push_back("x-api-key: " + key);
    } else if (!key.empty()) {
        headers.push_back("Authorization: Bearer " + key);
    }
    return headers;
}

std::string error_message(const std::string& body) {
    try {
        json j = json::parse(body);
        if (j.is_object() && j.contains("error")) {
            const json& e = j["error"];
            if (e.is_object() && e.contains("message")) return cut(text_of(e["message"]));
            if (e.is_string()) return cut(e.get<std::string>());
        }
        if (j.is_object() && j.contains("message")) return cut(text_of(j["message"]));
    } catch (const json::exception&) {
    }
    return cut(body, 200);
}

ChatAnswer parse_answer(Api api, const std::string& body) {
    json j = parse_json(body, "response");
    check_error(j);
    ChatAnswer a;
    a.model = text_of(j.value("model", json()));
    try {
        if (api == Api::openai) {
            const json& choice = j.at("choices").at(0);
            const json& message = choice.at("message");
            a.text = text_of(message.value("content", json()));
            a.reasoning = text_of(message.value("reasoning_content", json()));
            if (a.reasoning.empty()) a.reasoning = text_of(message.value("reasoning", json()));
            a.finish_reason = text_of(choice.value("finish_reason", json()));
            if (j.contains("usage") && j["usage"].is_object()) {
                a.input_tokens = j["usage"].value("prompt_tokens", 0L);
                a.output_tokens = j["usage"].value("completion_tokens", 0L);
            }
        } else {
            for (const auto& block : j.at("content")) {
                std::string type = block.value("type", "");
                if (type == "text") a.text += text_of(block.value("text", json()));
                if (type == "thinking") a.reasoning += text_of(block.value("thinking", json()));
            }
            a.finish_reason = text_of(j.value("stop_reason", json()));
            if (j.contains("usage") && j["usage"].is_object()) {
                a.input_tokens = j["usage"].value("input_tokens", 0L);
                a.output_tokens = j["usage"].value("output_tokens", 0L);
            }
        }
    } catch (const json::exception& e) {
        throw ProviderError("the response lacks the fields of its format (" +
                                std::string(e.what()) + "): " + cut(body, 200),
                            false);
    }
    return a;
}

void StreamReader::add(const SseEvent& event) {
    ++events_;
    if (api_ == Api::openai && event.data == "[DONE]") {
        finished_ = true;
        return;
    }
    json j = parse_json(event.data, "stream event");
    check_error(j);
    if (api_ == Api::openai)
        add_openai(j);
    else
        add_anthropic(event.event.empty() ? text_of(j.value("type", json())) : event.event, j);
}

void StreamReader::add_openai(const json& chunk) {
    if (!chunk.is_object()) return;
    if (answer_.model.empty()) answer_.model = text_of(chunk.value("model", json()));
    if (chunk.contains("usage") && chunk["usage"].is_object()) {
        answer_.input_tokens = chunk["usage"].value("prompt_tokens", answer_.input_tokens);
        answer_.output_tokens = chunk["usage"].value("completion_tokens", answer_.output_tokens);
    }
    if (!chunk.contains("choices") || !chunk["choices"].is_array() || chunk["choices"].empty())
        return;
    const json& choice = chunk["choices"][0];
    if (choice.contains("delta") && choice["delta"].is_object()) {
        const json& delta = choice["delta"];
        answer_.text += text_of(delta.value("content", json()));
        answer_.reasoning += text_of(delta.value("reasoning_content", json()));
        answer_.reasoning += text_of(delta.value("reasoning", json()));
    }
    std::string finish = text_of(choice.value("finish_reason", json()));
    if (!finish.empty()) {
        answer_.finish_reason = finish;
        saw_finish_reason_ = true;
    }
}

void StreamReader::add_anthropic(const std::string& type, const json& event) {
    if (type == "message_start") {
        const json& message = event.value("message", json::object());
        answer_.model = text_of(message.value("model", json()));
        if (message.contains("usage") && message["usage"].is_object()) {
            answer_.input_tokens = message["usage"].value("input_tokens", 0L);
            answer_.output_tokens = message["usage"].value("output_tokens", 0L);
        }
    } else if (type == "content_block_start") {
        const json& block = event.value("content_block", json::object());
        std::string kind = text_of(block.value("type", json()));
        if (kind == "text") answer_.text += text_of(block.value("text", json()));
        if (kind == "thinking") answer_.reasoning += text_of(block.value("thinking", json()));
    } else if (type == "content_block_delta") {
        const json& delta = event.value("delta", json::object());
        std::string kind = text_of(delta.value("type", json()));
        if (kind == "text_delta") answer_.text += text_of(delta.value("text", json()));
        if (kind == "thinking_delta") answer_.reasoning += text_of(delta.value("thinking", json()));
    } else if (type == "message_delta") {
        const json& delta = event.value("delta", json::object());
        std::string stop = text_of(delta.value("stop_reason", json()));
        if (!stop.empty()) answer_.finish_reason = stop;
        if (event.contains("usage") && event["usage"].is_object())
            answer_.output_tokens = event["usage"].value("output_tokens", answer_.output_tokens);
    } else if (type == "message_stop") {
        finished_ = true;
    }
}

ChatAnswer StreamReader::answer(bool require_end) const {
    if (require_end && !finished_ && !(api_ == Api::openai && saw_finish_reason_))
        throw ProviderError(
            "the stream ended before its end (after " + std::to_string(events_) + " event(s))",
            true);
    return answer_;
}

}  // namespace kbench::llm
