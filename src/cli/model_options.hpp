#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "llm/client.hpp"
#include "llm/generator.hpp"

namespace kbench::cli {

// Options of the commands that ask a language model (generate, refine).
struct ModelOptions {
    std::string provider;
    std::string model;
    std::string base_url;
    std::string api_key_env;
    std::optional<double> temperature;
    int max_tokens = 16384;
    std::optional<int> thinking_budget;
    std::optional<std::string> reasoning_effort;
    int concurrency = 4;
    double timeout_s = 900;
    double idle_timeout_s = 180;
    int max_attempts = 6;
    double retry_base_s = 2;
    std::optional<double> max_cost;
    std::vector<std::string> prices;
    std::size_t max_response_bytes = 8u << 20;
    bool no_stream = false;
    std::string prompt;  // a template file; empty: the built-in one for the backend
    std::string refine_prompt;
    std::string system;
    std::string hardware;  // a GPU of the table, "cpu", or empty
    std::optional<std::string> gpu_peaks;
    std::optional<std::string> few_shot;
};

// gpu_peaks: add --gpu-peaks (commands that evaluate have it already).
void add_model_options(CLI::App* command, ModelOptions& options, bool gpu_peaks = true);

// The client's settings: provider, key (from the environment), limits, prices. UsageError for a
// spending cap on a model without a price.
llm::ClientOptions make_client_options(const ModelOptions& options,
                                       std::function<void(const std::string&)> log);

// The templates, hardware description, few-shot pairs and request for a backend.
llm::GenerationSettings make_generation_settings(const ModelOptions& options, Backend backend);

// A run's default name from its parts: what a folder name may hold, the rest as '_'.
std::string run_slug(std::string text);

// "$0.42", or "unknown (no price for MODEL: add one with --prices FILE)".
std::string describe_spend(const llm::ModelClient& client, const std::string& model);

}  // namespace kbench::cli
