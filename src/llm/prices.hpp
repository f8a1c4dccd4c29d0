#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/files.hpp"
#include "llm/provider.hpp"

namespace kbench::llm {

// What a model's tokens cost, in US dollars a million.
struct Price {
    std::string provider;  // "*": any provider
    std::string model;     // also prices its dated variants (gpt-4o-2024-08-06)
    double input = 0;
    double output = 0;
};

// The built-in price list (data/prices.json) under the user's own (--prices FILE), which comes
// first. A local server (vLLM, SGLang, llama.cpp, Ollama) costs nothing.
class PriceTable {
  public:
    PriceTable();
    void add_file(const fs::path& path);  // UsageError naming what is wrong with it
    std::optional<Price> find(const Provider& provider, const std::string& model) const;
    // The cost of one exchange, or nothing when no entry names the model.
    std::optional<double> cost(const Provider& provider, const std::string& model, long input,
                               long output) const;

  private:
    std::vector<Price> user_;
    std::vector<Price> builtin_;
};

}  // namespace kbench::llm
