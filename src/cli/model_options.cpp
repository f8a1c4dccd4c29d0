#include "cli/model_options.hpp"

#include <cctype>
#include <cstdio>

#include "core/error.hpp"
#include "core/files.hpp"
#include "llm/prompt.hpp"

namespace kbench::cli {

void add_model_options(CLI::App* cmd, ModelOptions& o, bool gpu_peaks) {
    std::string names;
    for (const auto& p : llm::known_providers()) names += (names.empty() ? "" : ", ") + p.name;
    cmd->add_option("--provider", o.provider, "Who answers: " + names)->required();
    cmd->add_option("--model", o.model, "The model's name at that provider")->required();
    cmd->add_option("--base-url", o.base_url,
                    "The server's URL up to its version (default: the provider's; "
                    "http://localhost:8000/v1 for vllm)");
    cmd->add_option("--api-key-env", o.api_key_env,
                    "The environment variable holding the key (default: the provider's, like "
                    "OPENAI_API_KEY); keys are never written anywhere");
    cmd->add_option("--temperature", o.temperature, "Sampling temperature (default: the model's)");
    cmd->add_option("--max-tokens", o.max_tokens,
                    "Most tokens an answer may take, reasoning included")
        ->capture_default_str()
        ->check(CLI::PositiveNumber);
    cmd->add_option("--thinking-budget", o.thinking_budget,
                    "Anthropic's extended thinking: tokens it may think (below --max-tokens)");
    cmd->add_option("--reasoning-effort", o.reasoning_effort,
                    "OpenAI-style reasoning models: low, medium or high")
        ->check(CLI::IsMember({"minimal", "low", "medium", "high"}));
    cmd->add_option("--concurrency", o.concurrency, "Requests to the model at once")
        ->capture_default_str()
        ->check(CLI::Range(1, 256));
    cmd->add_option("--request-timeout", o.timeout_s, "Seconds a request may take in all")
        ->capture_default_str()
        ->check(CLI::PositiveNumber);
    cmd->add_option("--idle-timeout", o.idle_timeout_s,
                    "Seconds without a byte from the server before a request is given up")
        ->capture_default_str()
        ->check(CLI::PositiveNumber);
    cmd->add_option("--max-attempts", o.max_attempts,
                    "Tries a request gets (429, 5xx, dropped connections, timeouts)")
        ->capture_default_str()
        ->check(CLI::Range(1, 100));
    cmd->add_option("--retry-base", o.retry_base_s,
                    "Seconds of the first backoff (doubled each retry, with jitter)")
        ->capture_default_str()
        ->check(CLI::NonNegativeNumber);
    cmd->add_option("--max-cost", o.max_cost,
                    "US dollars this command may spend: no new request once reached")
        ->check(CLI::PositiveNumber);
    cmd->add_option("--prices", o.prices,
                    "A price table of your own (the schema of data/prices.json), ahead of "
                    "kbench's")
        ->check(CLI::ExistingFile);
    cmd->add_option("--max-response-bytes", o.max_response_bytes,
                    "Largest response kept; a larger one is an error")
        ->capture_default_str();
    cmd->add_flag("--no-stream", o.no_stream, "Ask for whole responses instead of streams");
    cmd->add_option("--prompt", o.prompt,
                    "A first-prompt template of your own (default: kbench's for the backend; "
                    "kbench prompt --template cuda prints it)")
        ->check(CLI::ExistingFile);
    cmd->add_option("--refine-prompt", o.refine_prompt,
                    "The feedback message's template (default: kbench's prompts/refine.md)")
        ->check(CLI::ExistingFile);
    cmd->add_option("--system", o.system, "A system message");
    cmd->add_option("--hardware", o.hardware,
                    "Describe this hardware in the prompt: a GPU of the GPU table (H200, A100, "
                    "...) or cpu");
    if (gpu_peaks)
        cmd->add_option("--gpu-peaks", o.gpu_peaks,
                        "A GPU table of your own for --hardware (the schema of data/gpus.json)")
            ->check(CLI::ExistingFile);
    cmd->add_option("--few-shot", o.few_shot,
                    "A folder of example pairs (NAME.reference.py with NAME.candidate.py) shown "
                    "in the prompt")
        ->check(CLI::ExistingDirectory);
}

llm::ClientOptions make_client_options(const ModelOptions& o,
                                       std::function<void(const std::string&)> log) {
    llm::ClientOptions c;
    c.provider = llm::find_provider(o.provider, o.base_url, o.api_key_env);
    bool anthropic = c.provider.api == llm::Api::anthropic;
    if (o.thinking_budget && !anthropic)
        throw UsageError("--thinking-budget is for Anthropic's messages API",
                         "for OpenAI-style reasoning models use --reasoning-effort");
    if (o.reasoning_effort && anthropic)
        throw UsageError("--reasoning-effort is for OpenAI-style reasoning models",
                         "for Anthropic's extended thinking use --thinking-budget");
    if (o.thinking_budget && *o.thinking_budget >= o.max_tokens)
        throw UsageError("--thinking-budget " + std::to_string(*o.thinking_budget) +
                             " leaves no room for the answer under --max-tokens " +
                             std::to_string(o.max_tokens),
                         "raise --max-tokens above the thinking budget");
    if (o.thinking_budget && o.temperature)
        throw UsageError("Anthropic's extended thinking takes no temperature",
                         "leave --temperature out, or --thinking-budget");
    c.key = llm::api_key(c.provider);
    c.timeout_s = o.timeout_s;
    c.idle_timeout_s = o.idle_timeout_s;
    c.max_attempts = o.max_attempts;
    c.backoff_base_s = o.retry_base_s;
    c.max_response_bytes = o.max_response_bytes;
    c.concurrency = o.concurrency;
    c.max_cost = o.max_cost;
    for (const auto& file : o.prices) c.prices.add_file(file);
    if (o.max_cost && !c.prices.find(c.provider, o.model))
        throw UsageError("--max-cost needs a price for " + o.model + " at " + c.provider.name +
                             ", and kbench's price list has none",
                         "give one with --prices FILE ({\"prices\": [{\"provider\": \"" +
                             c.provider.name + "\", \"model\": \"" + o.model +
                             "\", \"input\": USD, \"output\": USD}]}, a million tokens)");
    c.log = std::move(log);
    return c;
}

llm::GenerationSettings make_generation_settings(const ModelOptions& o, Backend backend) {
    llm::GenerationSettings s;
    s.prompt_template = o.prompt.empty() ? llm::builtin_prompt(std::string(to_string(backend)))
                                         : read_file(o.prompt);
    s.refine_template =
        o.refine_prompt.empty() ? llm::builtin_prompt("refine") : read_file(o.refine_prompt);
    s.system = o.system;
    if (!o.hardware.empty())
        s.hardware = llm::hardware_description(
            o.hardware, o.gpu_peaks ? std::optional<fs::path>(*o.gpu_peaks) : std::nullopt);
    if (o.few_shot) s.few_shot = llm::load_few_shot(*o.few_shot);
    s.request.model = o.model;
    s.request.temperature = o.temperature;
    s.request.max_tokens = o.max_tokens;
    s.request.thinking_budget = o.thinking_budget;
    s.request.reasoning_effort = o.reasoning_effort;
    s.request.stream = !o.no_stream;
    // A template that does not render is said now, not after the first request.
    llm::PromptInputs probe;
    probe.backend = backend;
    llm::render_prompt(s.prompt_template, probe);
    if (llm::render_refine(s.refine_template, 1, "\x01").find('\x01') == std::string::npos)
        throw UsageError(
            "the refine template has no {{feedback}}: the model would never see what "
            "the evaluation found",
            "put {{feedback}} in it (kbench prompt --template refine shows kbench's)");
    return s;
}

std::string run_slug(std::string text) {
    for (char& c : text)
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-' && c != '_')
            c = '_';
    return text;
}

std::string describe_spend(const llm::ModelClient& client, const std::string& model) {
    auto spend = client.spend();
    char text[64];
    std::snprintf(text, sizeof(text), "$%.4f", spend.usd);
    if (spend.cost_known) return text;
    return std::string(text) + " known; the rest unknown (no price for " + model +
           ": add one with --prices FILE)";
}

}  // namespace kbench::cli
