// The model clients against a real HTTP server on loopback that speaks each provider's wire
// format and misbehaves on command (tests/llm/fake_llm_server.py).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <thread>

#include "core/error.hpp"
#include "core/files.hpp"
#include "llm/client.hpp"
#include "llm/http.hpp"
#include "llm/prices.hpp"
#include "llm/provider.hpp"
#include "llm/sse.hpp"
#include "support/fake_llm.hpp"

namespace kbench::llm {
namespace {

using nlohmann::json;
using test::FakeLlmServer;

fs::path scratch(const std::string& name) {
    static fs::path root = make_temp_dir("kbench-llm-test-");
    return root / name;
}

ClientOptions options(const FakeLlmServer& server, const std::string& provider,
                      const std::string& prefix = "/v1") {
    ClientOptions o;
    o.provider = find_provider(provider, server.url(prefix));
    o.key = "sk-test-secret-key-123456";
    o.backoff_base_s = 0.05;
    o.backoff_max_s = 0.2;
    o.max_attempts = 3;
    o.timeout_s = 20;
    return o;
}

ChatRequest question(bool stream = false) {
    ChatRequest r;
    r.model = "m";
    r.system = "be brief";
    r.messages = {{"user", "write ModelNew"}};
    r.temperature = 0.5;
    r.max_tokens = 100;
    r.stream = stream;
    return r;
}

// Each provider kind and both ways of answering give the text and the thinking apart, with
// the tokens counted.
struct WireCase {
    std::string provider;
    std::string prefix;
    bool stream;
};

class Wire : public ::testing::TestWithParam<WireCase> {};

TEST_P(Wire, AnswerAndReasoningApart) {
    const auto& c = GetParam();
    std::string name = c.provider + (c.stream ? "-stream" : "-json");
    FakeLlmServer server({{"rules",
                           {{{"text", "```python\nclass ModelNew: pass\n```"},
                             {"reasoning", "think about tiling first"},
                             {"usage", {{"input", 120}, {"output", 30}}},
                             {"chunk_chars", 5}}}}},
                         scratch(name));
    ModelClient client(options(server, c.provider, c.prefix));
    Exchange e = client.ask(question(c.stream), "sample 0", "test");
    ASSERT_TRUE(e.ok) << e.error;
    EXPECT_EQ(e.answer.text, "```python\nclass ModelNew: pass\n```");
    EXPECT_EQ(e.answer.reasoning, "think about tiling first");
    EXPECT_EQ(e.answer.input_tokens, 120);
    EXPECT_EQ(e.answer.output_tokens, 30);
    EXPECT_EQ(e.attempts, 1);
    auto requests = server.requests();
    ASSERT_EQ(requests.size(), 1u);
    const json& body = requests[0]["body"];
    const json& headers = requests[0]["headers"];
    EXPECT_EQ(body["model"], "m");
    EXPECT_EQ(body.value("stream", false), c.stream);
    if (c.provider == "anthropic") {
        EXPECT_EQ(requests[0]["path"], "/v1/messages");
        EXPECT_EQ(body["system"], "be brief");
        EXPECT_EQ(headers["x-api-key"], "sk-test-secret-key-123456");
        EXPECT_EQ(headers["anthropic-version"], "2023-06-01");
    } else {
        EXPECT_EQ(requests[0]["path"], c.prefix + "/chat/completions");
        EXPECT_EQ(body["messages"][0]["role"], "system");
        EXPECT_EQ(headers["authorization"], "Bearer sk-test-secret-key-123456");
        if (c.stream) {
            EXPECT_TRUE(body["stream_options"]["include_usage"].get<bool>());
        }
    }
    // What the run's store keeps never holds the key.
    EXPECT_EQ(e.request.dump().find("sk-test"), std::string::npos);
    EXPECT_EQ(e.raw.find("sk-test"), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(
    Providers, Wire,
    ::testing::Values(WireCase{"openai", "/v1", false}, WireCase{"openai", "/v1", true},
                      WireCase{"anthropic", "/v1", false}, WireCase{"anthropic", "/v1", true},
                      WireCase{"gemini", "/v1beta/openai", false},
                      WireCase{"gemini", "/v1beta/openai", true}),
    [](const auto& info) { return info.param.provider + (info.param.stream ? "Stream" : "Json"); });

// A server that echoes the key, in pieces a search of the raw stream cannot find: the answer
// keeps it out, and the raw response is withheld.
TEST(Client, AKeyEchoedInPiecesIsKeptOutOfEverythingStored) {
    for (bool stream : {false, true}) {
        FakeLlmServer server(
            {{"rules",
              {{{"text", "your key is sk-test-secret-key-123456, thanks"}, {"chunk_chars", 5}}}}},
            scratch(stream ? "echo-stream" : "echo"));
        ModelClient client(options(server, "openai"));
        Exchange e = client.ask(question(stream), "s", "test");
        ASSERT_TRUE(e.ok) << e.error;
        EXPECT_EQ(e.answer.text, "your key is [key], thanks");
        EXPECT_EQ(e.raw.find("sk-test"), std::string::npos);
        EXPECT_NE(e.raw.find("withheld"), std::string::npos) << e.raw;
    }
}

// Asked for a stream, a server may answer with the whole response.
TEST(Client, AWholeResponseToAStreamRequestIsRead) {
    json whole = {{"id", "x"},
                  {"model", "m"},
                  {"choices",
                   {{{"index", 0},
                     {"message", {{"role", "assistant"}, {"content", "whole"}}},
                     {"finish_reason", "stop"}}}},
                  {"usage", {{"prompt_tokens", 3}, {"completion_tokens", 1}}}};
    FakeLlmServer server({{"rules", {{{"body", whole.dump()}}}}}, scratch("whole"));
    ModelClient client(options(server, "openai"));
    Exchange e = client.ask(question(true), "s", "test");
    ASSERT_TRUE(e.ok) << e.error;
    EXPECT_EQ(e.answer.text, "whole");
}

TEST(Client, RetriesA429AfterItsRetryAfter) {
    FakeLlmServer server(
        {{"rules", {{{"times", 1}, {"status", 429}, {"retry_after", 1}}, {{"text", "fine"}}}}},
        scratch("429"));
    ModelClient client(options(server, "openai"));
    auto start = std::chrono::steady_clock::now();
    Exchange e = client.ask(question(), "s", "test");
    double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    ASSERT_TRUE(e.ok) << e.error;
    EXPECT_EQ(e.answer.text, "fine");
    EXPECT_EQ(e.attempts, 2);
    EXPECT_GE(took, 0.95);  // the server's Retry-After, not the 0.05 s backoff
    EXPECT_EQ(e.attempts_log[0]["status"], 429);
    EXPECT_GE(e.attempts_log[0]["waited_s"].get<double>(), 1.0);
    EXPECT_EQ(server.requests().size(), 2u);
}

TEST(Client, RetriesServerErrorsDroppedConnectionsAndCutStreams) {
    FakeLlmServer server({{"rules",
                           {{{"times", 1}, {"status", 500}},
                            {{"times", 1}, {"drop", true}},
                            {{"times", 1}, {"drop_after_chunks", 3}},
                            {{"text", "after three failures"}}}}},
                         scratch("flaky"));
    auto o = options(server, "anthropic");
    o.max_attempts = 4;
    ModelClient client(o);
    Exchange e = client.ask(question(true), "s", "test");
    ASSERT_TRUE(e.ok) << e.error;
    EXPECT_EQ(e.answer.text, "after three failures");
    ASSERT_EQ(e.attempts_log.size(), 4u);
    EXPECT_EQ(e.attempts_log[0]["status"], 500);
    EXPECT_EQ(e.attempts_log[1]["failure"], "dropped");
    EXPECT_EQ(e.attempts_log[2]["failure"], "dropped");
}

TEST(Client, GivesUpWithAClearErrorWhenRetriesRunOut) {
    FakeLlmServer server({{"rules", {{{"status", 503}, {"error_message", "overloaded now"}}}}},
                         scratch("503"));
    ModelClient client(options(server, "openai"));
    Exchange e = client.ask(question(), "s", "test");
    EXPECT_FALSE(e.ok);
    EXPECT_EQ(e.attempts, 3);
    EXPECT_NE(e.error.find("HTTP 503"), std::string::npos) << e.error;
    EXPECT_NE(e.error.find("overloaded now"), std::string::npos) << e.error;
    EXPECT_EQ(server.requests().size(), 3u);
}

TEST(Client, DoesNotRetryARequestTheServerRefuses) {
    FakeLlmServer server({{"rules", {{{"status", 401}, {"error_message", "bad key"}}}}},
                         scratch("401"));
    ModelClient client(options(server, "openai"));
    Exchange e = client.ask(question(), "s", "test");
    EXPECT_FALSE(e.ok);
    EXPECT_EQ(e.attempts, 1);
    EXPECT_NE(e.error.find("HTTP 401: bad key"), std::string::npos) << e.error;
}

TEST(Client, ASlowResponsePastTheTimeoutIsRetriedThenAnError) {
    FakeLlmServer server({{"rules", {{{"delay_s", 3}, {"text", "too late"}}}}}, scratch("slow"));
    auto o = options(server, "openai");
    o.timeout_s = 0.5;
    o.max_attempts = 2;
    ModelClient client(o);
    auto start = std::chrono::steady_clock::now();
    Exchange e = client.ask(question(), "s", "test");
    double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_FALSE(e.ok);
    EXPECT_EQ(e.attempts, 2);
    EXPECT_NE(e.error.find("timed out"), std::string::npos) << e.error;
    EXPECT_LT(took, 2.5);
}

TEST(Client, MalformedJsonIsAnErrorAfterRetries) {
    for (bool stream : {false, true}) {
        FakeLlmServer server({{"rules", {{{"malformed", true}, {"text", "x"}}}}},
                             scratch(stream ? "malformed-stream" : "malformed"));
        ModelClient client(options(server, "openai"));
        Exchange e = client.ask(question(stream), "s", "test");
        EXPECT_FALSE(e.ok);
        EXPECT_NE(e.error.find("not valid JSON"), std::string::npos) << e.error;
        EXPECT_EQ(e.attempts, 3);
    }
}

TEST(Client, AnEmptyAnswerIsAClearError) {
    FakeLlmServer server({{"rules", {{{"text", ""}, {"finish_reason", "length"}}}}},
                         scratch("empty"));
    ModelClient client(options(server, "openai"));
    Exchange e = client.ask(question(), "s", "test");
    EXPECT_FALSE(e.ok);
    EXPECT_NE(e.error.find("empty"), std::string::npos) << e.error;
    EXPECT_NE(e.error.find("--max-tokens"), std::string::npos) << e.error;
    EXPECT_EQ(e.attempts, 1);  // asking again would pay again for the same
}

TEST(Client, AResponseOverTheLimitIsRefused) {
    FakeLlmServer server({{"rules", {{{"text", std::string(5000, 'x')}}}}}, scratch("large"));
    auto o = options(server, "openai");
    o.max_response_bytes = 1000;
    ModelClient client(o);
    Exchange e = client.ask(question(), "s", "test");
    EXPECT_FALSE(e.ok);
    EXPECT_NE(e.error.find("1000 bytes"), std::string::npos) << e.error;
    EXPECT_EQ(e.attempts, 1);
}

// Nothing listening at the address from the start (a server not started, a wrong --base-url):
// said at once with the URL tried, never retried, and no later request is sent.
TEST(Client, NothingListeningIsSaidAtOnceWithTheUrlAndNotAskedAgain) {
    ClientOptions o;
    o.provider = find_provider("vllm", "http://127.0.0.1:9/v1");  // discard: nothing listens
    o.backoff_base_s = 1;
    o.max_attempts = 6;
    ModelClient client(o);
    auto start = std::chrono::steady_clock::now();
    Exchange e = client.ask(question(), "s", "test");
    EXPECT_FALSE(e.ok);
    EXPECT_EQ(e.attempts, 1);
    EXPECT_NE(e.error.find("nothing answers at http://127.0.0.1:9/v1/chat/completions"),
              std::string::npos)
        << e.error;
    EXPECT_NE(e.error.find("--base-url"), std::string::npos) << e.error;
    EXPECT_EQ(client.unreachable(), e.error);
    Exchange again = client.ask(question(true), "s", "test");
    EXPECT_FALSE(again.ok);
    EXPECT_EQ(again.attempts, 0);
    EXPECT_EQ(again.error, e.error);
    double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_LT(took, 1.0);
}

// A server that answered once and then went away (a restart) is asked again, with backoff.
TEST(Client, AServerThatAnsweredOnceIsAskedAgainWhenItGoesAway) {
    auto server =
        std::make_unique<FakeLlmServer>(json{{"rules", {{{"text", "first"}}}}}, scratch("gone"));
    auto o = options(*server, "openai");
    o.max_attempts = 2;
    ModelClient client(o);
    ASSERT_TRUE(client.ask(question(), "s", "test").ok);
    server.reset();
    Exchange e = client.ask(question(true), "t", "test");
    EXPECT_FALSE(e.ok);
    EXPECT_EQ(e.attempts, 2);
    EXPECT_NE(e.error.find("could not connect"), std::string::npos) << e.error;
    EXPECT_EQ(client.unreachable(), "");
}

TEST(Client, TheCacheAnswersTheSameRequestAndItsKeyHoldsNoCredentials) {
    FakeLlmServer server({{"rules", {{{"text", "answer"}}}}}, scratch("cache"));
    auto o = options(server, "openai");
    std::map<std::string, ChatAnswer> cache;
    o.cache = [&](const std::string& key) -> std::optional<ChatAnswer> {
        auto it = cache.find(key);
        if (it == cache.end()) return std::nullopt;
        return it->second;
    };
    ModelClient client(o);
    Exchange first = client.ask(question(true), "sample 0", "test");
    ASSERT_TRUE(first.ok);
    cache[first.key] = first.answer;
    // Streamed or not, the same request is answered from the cache.
    Exchange again = client.ask(question(false), "sample 0", "test");
    EXPECT_TRUE(again.cached);
    EXPECT_EQ(again.answer.text, "answer");
    // Another sample of the same prompt is a new request.
    Exchange other = client.ask(question(), "sample 1", "test");
    EXPECT_FALSE(other.cached);
    EXPECT_EQ(server.requests().size(), 2u);
    // Another key for the same provider gives the same cache key.
    auto o2 = options(server, "openai");
    o2.key = "sk-another-key-999999";
    EXPECT_EQ(ModelClient(o2).cache_key(question(), "sample 0"), first.key);
    EXPECT_EQ(client.spend().cached, 1);
}

TEST(Client, AtMostConcurrencyRequestsAtOnce) {
    FakeLlmServer server({{"rules", {{{"delay_s", 0.5}, {"text", "ok"}}}}}, scratch("limit"));
    auto o = options(server, "openai");
    o.concurrency = 2;
    ModelClient client(o);
    auto start = std::chrono::steady_clock::now();
    std::vector<std::thread> threads;
    std::atomic<int> ok{0};
    for (int i = 0; i < 4; ++i)
        threads.emplace_back(
            [&, i] { ok += client.ask(question(), "sample " + std::to_string(i), "test").ok; });
    for (auto& t : threads) t.join();
    double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_EQ(ok, 4);
    EXPECT_GE(took, 0.95);  // two rounds of two
}

TEST(Client, CountsTokensAndCostAndStopsAtTheCap) {
    FakeLlmServer server(
        {{"rules", {{{"text", "ok"}, {"usage", {{"input", 1000000}, {"output", 0}}}}}}},
        scratch("cost"));
    auto o = options(server, "openai");
    fs::path prices = scratch("prices.json");
    write_file_atomic(
        prices,
        R"({"prices": [{"provider": "openai", "model": "m", "input": 2.0, "output": 8.0}]})");
    o.prices.add_file(prices);
    o.max_cost = 3.0;
    ModelClient client(o);
    EXPECT_TRUE(client.ask(question(), "sample 0", "test").ok);
    EXPECT_TRUE(client.ask(question(), "sample 1", "test").ok);
    Exchange third = client.ask(question(), "sample 2", "test");
    EXPECT_TRUE(third.over_budget);
    EXPECT_FALSE(third.ok);
    EXPECT_EQ(server.requests().size(), 2u);
    EXPECT_DOUBLE_EQ(client.spend().usd, 4.0);
    EXPECT_EQ(client.spend().input_tokens, 2000000);
}

TEST(Providers, KeysComeFromTheEnvironmentAndAreRequiredForHostedOnes) {
    ::unsetenv("KBENCH_TEST_NO_SUCH_KEY");
    Provider hosted = find_provider("openai", "", "KBENCH_TEST_NO_SUCH_KEY");
    try {
        api_key(hosted);
        FAIL() << "no error";
    } catch (const UsageError& e) {
        EXPECT_NE(std::string(e.what()).find("KBENCH_TEST_NO_SUCH_KEY is not set"),
                  std::string::npos);
    }
    // A local server needs none, unless the user names a variable: then it must be set.
    ::unsetenv("VLLM_API_KEY");
    EXPECT_EQ(api_key(find_provider("vllm")), "");
    EXPECT_THROW(api_key(find_provider("vllm", "", "KBENCH_TEST_NO_SUCH_KEY")), UsageError);
    // Any server: no hosted provider's key goes to it unless named.
    ::setenv("OPENAI_API_KEY", "sk-hosted-key-000000000", 1);
    EXPECT_EQ(api_key(find_provider("openai-compatible", "http://elsewhere/v1")), "");
    ::unsetenv("OPENAI_API_KEY");
    ::setenv("KBENCH_TEST_KEY", "abc", 1);
    EXPECT_EQ(api_key(find_provider("anthropic", "", "KBENCH_TEST_KEY")), "abc");
    EXPECT_THROW(find_provider("nonesuch"), UsageError);
    EXPECT_THROW(find_provider("openai-compatible"), UsageError);  // no base URL
    EXPECT_THROW(find_provider("openai", "ftp://x"), UsageError);
    EXPECT_EQ(find_provider("vllm", "http://h:1/v1/").base_url, "http://h:1/v1");
}

TEST(Prices, DatedVariantsUserTablesAndLocalServers) {
    PriceTable table;
    Provider openai = find_provider("openai");
    auto p = table.find(openai, "gpt-4o-2024-08-06");
    ASSERT_TRUE(p);
    EXPECT_EQ(p->model, "gpt-4o");
    EXPECT_EQ(table.find(openai, "gpt-4o-mini")->model, "gpt-4o-mini");  // the longer name wins
    EXPECT_FALSE(table.find(openai, "unknown-model"));
    EXPECT_DOUBLE_EQ(*table.cost(find_provider("vllm"), "anything", 1000, 1000), 0.0);
    fs::path mine = scratch("mine.json");
    write_file_atomic(mine, R"({"prices": [{"model": "gpt-4o", "input": 1, "output": 1}]})");
    table.add_file(mine);
    EXPECT_DOUBLE_EQ(*table.cost(openai, "gpt-4o", 1000000, 1000000), 2.0);
    write_file_atomic(mine, R"({"prices": [{"model": "x"}]})");
    EXPECT_THROW(table.add_file(mine), UsageError);
}

TEST(Sse, EventsSplitAnywhereCommentsAndLineEndings) {
    std::string stream =
        ": hello\r\nevent: a\r\ndata: one\r\ndata: two\r\n\r\ndata: {\"x\":1}\n\n"
        "data:three\r\rdata: tail";
    for (std::size_t piece : {1u, 2u, 7u, 1000u}) {
        SseParser parser;
        std::vector<SseEvent> events;
        for (std::size_t i = 0; i < stream.size(); i += piece)
            for (auto& e : parser.feed(std::string_view(stream).substr(i, piece)))
                events.push_back(e);
        for (auto& e : parser.finish()) events.push_back(e);
        ASSERT_EQ(events.size(), 4u) << piece;
        EXPECT_EQ(events[0].event, "a");
        EXPECT_EQ(events[0].data, "one\ntwo");
        EXPECT_EQ(events[1].data, "{\"x\":1}");
        EXPECT_EQ(events[2].data, "three");
        EXPECT_EQ(events[3].data, "tail");
    }
}

TEST(Wire, ErrorsInsideA200AreProviderErrors) {
    try {
        parse_answer(Api::openai, R"({"error": {"message": "rate limited", "code": 429}})");
        FAIL();
    } catch (const ProviderError& e) {
        EXPECT_TRUE(e.retryable());
    }
    try {
        parse_answer(Api::openai, R"({"choices": []})");
        FAIL();
    } catch (const ProviderError& e) {
        EXPECT_FALSE(e.retryable());
    }
    StreamReader reader(Api::anthropic);
    EXPECT_THROW(
        reader.add(
            {"error", R"({"type":"error","error":{"type":"overloaded_error","message":"busy"}})"}),
        ProviderError);
}

TEST(Wire, AnthropicThinkingKeepsTheTemperatureOut) {
    ChatRequest r = question();
    r.thinking_budget = 2000;
    json body = wire_body(find_provider("anthropic"), r);
    EXPECT_EQ(body["thinking"]["budget_tokens"], 2000);
    EXPECT_FALSE(body.contains("temperature"));
    json openai = wire_body(find_provider("openai"), question());
    EXPECT_TRUE(openai.contains("max_completion_tokens"));
    EXPECT_TRUE(wire_body(find_provider("vllm"), question()).contains("max_tokens"));
}

}  // namespace
}  // namespace kbench::llm
