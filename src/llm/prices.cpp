#include "llm/prices.hpp"

#include "core/embedded_text.hpp"
#include "core/error.hpp"

// Generated at build time from data/prices.json (cmake/embed_text.cmake).
namespace kbench::llm::embedded {
extern const EmbeddedText kBuiltinPrices[];
}  // namespace kbench::llm::embedded

namespace kbench::llm {
namespace {

std::vector<Price> read_prices(const json& table, const std::string& what) {
    const json& list = table.is_object() ? table.value("prices", json()) : table;
    if (!list.is_array())
        throw UsageError(what + " is not a price table",
                         "give a JSON object with a \"prices\" list (see data/prices.json)");
    std::vector<Price> out;
    for (const auto& entry : list) {
        if (!entry.is_object() || !entry.contains("model") || !entry["model"].is_string() ||
            !entry.contains("input") || !entry["input"].is_number() || !entry.contains("output") ||
            !entry["output"].is_number())
            throw UsageError(what + ": an entry lacks model, input or output: " + entry.dump(),
                             "each entry is {\"provider\": NAME or \"*\", \"model\": NAME, "
                             "\"input\": USD a million tokens, \"output\": USD a million tokens}");
        out.push_back({entry.value("provider", "*"), entry["model"].get<std::string>(),
                       entry["input"].get<double>(), entry["output"].get<double>()});
    }
    return out;
}

// How well ENTRY names MODEL: its length for itself or a dated variant of it, else -1.
int match(const Price& entry, const Provider& provider, const std::string& model) {
    if (entry.provider != "*" && entry.provider != provider.name) return -1;
    // Gateways name models as vendor/model (OpenRouter): the entry may name either.
    std::string bare = model.substr(model.find('/') == std::string::npos ? 0 : model.find('/') + 1);
    for (const std::string& m : {model, bare}) {
        if (m == entry.model) return int(entry.model.size()) + 1000;
        if (m.rfind(entry.model + "-", 0) == 0) return int(entry.model.size());
    }
    return -1;
}

std::optional<Price> best(const std::vector<Price>& list, const Provider& provider,
                          const std::string& model) {
    std::optional<Price> found;
    int score = -1;
    for (const auto& entry : list) {
        int s = match(entry, provider, model);
        if (s > score) {
            score = s;
            found = entry;
        }
    }
    return found;
}

}  // namespace

PriceTable::PriceTable()
    : builtin_(read_prices(json::parse(embedded::kBuiltinPrices[0].text), "the built-in prices")) {}

void PriceTable::add_file(const fs::path& path) {
    json table;
    try {
        table = json::parse(read_file(path));
    } catch (const json::exception& e) {
        throw UsageError("the price table " + path.string() + " is not JSON: " + e.what(),
                         "see data/prices.json for the schema");
    }
    auto entries = read_prices(table, "the price table " + path.string());
    user_.insert(user_.begin(), entries.begin(), entries.end());
}

std::optional<Price> PriceTable::find(const Provider& provider, const std::string& model) const {
    if (auto p = best(user_, provider, model)) return p;
    if (provider.local) return Price{provider.name, model, 0, 0};
    return best(builtin_, provider, model);
}

std::optional<double> PriceTable::cost(const Provider& provider, const std::string& model,
                                       long input, long output) const {
    auto price = find(provider, model);
    if (!price) return std::nullopt;
    return (double(input) * price->input + double(output) * price->output) / 1e6;
}

}  // namespace kbench::llm
