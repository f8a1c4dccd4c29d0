#include "llm/prompt.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <set>
#include <sstream>

#include "core/embedded_text.hpp"
#include "core/error.hpp"
#include "integrity/floor.hpp"

namespace kbench::integrity {
// Generated at build time from data/gpus.json.
extern const char* const kBuiltinGpuTable;
}  // namespace kbench::integrity

namespace kbench::llm {

namespace embedded {
// Generated at build time from prompts/ (cmake/embed_text.cmake).
extern const EmbeddedText kBuiltinPrompts[];
}  // namespace embedded

namespace {

bool is_name_start(char c) {
    return std::isalpha(static_cast<unsigned char>(c)) || c == '_';
}
bool is_name_char(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}
bool is_blank(std::string_view text) {
    return std::all_of(text.begin(), text.end(),
                       [](char c) { return std::isspace(static_cast<unsigned char>(c)); });
}

std::string trim_end(std::string text) {
    while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.pop_back();
    return text;
}

// "{{", optional spaces, a name, optional spaces, "}}" at line[at]: the name and where it ends.
std::optional<std::pair<std::string, std::size_t>> placeholder_at(std::string_view line,
                                                                  std::size_t at) {
    std::size_t i = at + 2;
    auto skip_spaces = [&] {
        while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    };
    skip_spaces();
    if (i >= line.size() || !is_name_start(line[i])) return std::nullopt;
    std::size_t begin = i;
    while (i < line.size() && is_name_char(line[i])) ++i;
    std::string name(line.substr(begin, i - begin));
    skip_spaces();
    if (line.substr(i, 2) != "}}") return std::nullopt;
    return std::make_pair(name, i + 2);
}

std::string known_names(const std::map<std::string, std::string>& values) {
    std::string out;
    for (const auto& [name, value] : values)
        out += (out.empty() ? "" : ", ") + ("{{" + name + "}}");
    return out.empty() ? "none" : out;
}

// One line of a template, rendered; nothing when it held only placeholders with empty values.
std::optional<std::string> render_line(std::string_view line, int number,
                                       const std::map<std::string, std::string>& values) {
    std::string out;
    std::size_t pos = 0;
    int placeholders = 0;
    for (std::size_t at = line.find("{{"); at != std::string_view::npos;
         at = line.find("{{", pos)) {
        auto found = placeholder_at(line, at);
        if (!found) {  // not a placeholder: keep one brace and look again after it
            out.append(line.substr(pos, at + 1 - pos));
            pos = at + 1;
            continue;
        }
        auto value = values.find(found->first);
        if (value == values.end())
            throw UsageError(fmt::format("unknown placeholder {{{{{}}}}} on line {} of the prompt "
                                         "template; the known placeholders are {}",
                                         found->first, number, known_names(values)),
                             "fix the template's placeholder or remove it");
        out.append(line.substr(pos, at - pos));
        out += value->second;
        pos = found->second;
        ++placeholders;
    }
    out.append(line.substr(pos));
    if (placeholders > 0 && is_blank(out)) return std::nullopt;
    return out;
}

std::string_view kernels_in_words(Backend backend) {
    switch (backend) {
        case Backend::cuda:
            return "custom CUDA kernels";
        case Backend::triton:
            return "custom Triton kernels";
        case Backend::cpu:
            return "custom C++ code";
    }
    return "custom kernels";
}

// A fenced Python block that the code's own backticks cannot close.
std::string python_block(const std::string& code) {
    std::size_t longest = 0, run = 0;
    for (char c : code) {
        run = c == '`' ? run + 1 : 0;
        longest = std::max(longest, run);
    }
    std::string fence(std::max<std::size_t>(3, longest + 1), '`');
    return fence + "python\n" + trim_end(code) + "\n" + fence + "\n";
}

std::string few_shot_section(Backend backend, const std::vector<ExamplePair>& pairs) {
    if (pairs.empty()) return {};
    std::string out = "# More examples\n";
    for (std::size_t i = 0; i < pairs.size(); ++i) {
        out += fmt::format("\n## Example {}\n\nA reference program:\n\n", i + 1);
        out += python_block(pairs[i].reference);
        out += fmt::format("\nA program with {} for it:\n\n", kernels_in_words(backend));
        out += python_block(pairs[i].candidate);
    }
    return out;
}

std::string hardware_section(const std::string& hardware) {
    if (is_blank(hardware)) return {};
    return "# Hardware\n\n" + trim_end(hardware) + "\n";
}

// ---- GPUs ----

json table_entries(const json& table) {
    if (table.is_object() && table.contains("gpus") && table["gpus"].is_array())
        return table["gpus"];
    return table.is_array() ? table : json::array();
}

// The strings a GPU's name is matched against, over the user's table and the built-in one.
std::string known_gpus(const std::optional<fs::path>& gpu_table) {
    std::vector<json> tables;
    if (gpu_table) tables.push_back(json::parse(read_file(*gpu_table), nullptr, false));
    tables.push_back(json::parse(integrity::kBuiltinGpuTable));
    std::string out;
    for (const auto& table : tables)
        for (const auto& entry : table_entries(table))
            for (const auto& match : entry.value("match", json::array()))
                if (match.is_string()) out += (out.empty() ? "" : ", ") + match.get<std::string>();
    return out;
}

// A rate's figure: the number itself, or its "datasheet" (else "measured") figure.
std::optional<double> figure(const json& entry, const char* key) {
    if (!entry.contains(key)) return std::nullopt;
    const json& field = entry[key];
    if (field.is_number()) return field.get<double>();
    if (!field.is_object()) return std::nullopt;
    for (const char* which : {"datasheet", "measured"})
        if (field.contains(which) && field[which].is_number()) return field[which].get<double>();
    return std::nullopt;
}

std::string gpu_description(const json& entry) {
    std::string out = fmt::format("The program runs on one {} GPU.\n",
                                  entry.value("name", std::string("unnamed")));
    auto line = [&](const char* key, const char* label, const char* unit, double scale = 1) {
        if (auto value = figure(entry, key))
            out += fmt::format("- {}: {:g}{}{}\n", label, *value * scale, *unit ? " " : "", unit);
    };
    line("memory_GB", "memory", "GB");
    line("sm_count", "streaming multiprocessors (SMs)", "");
    line("memory_bandwidth_GBps", "memory bandwidth", "GB/s");
    line("l2_bytes", "L2 cache", "MiB", 1.0 / (1 << 20));
    line("fp32_tflops", "FP32 (CUDA cores)", "TFLOPS");
    line("tf32_tflops", "TF32 tensor cores (dense)", "TFLOPS");
    line("fp16_tflops", "FP16 tensor cores (dense)", "TFLOPS");
    line("bf16_tflops", "BF16 tensor cores (dense)", "TFLOPS");
    line("fp64_tflops", "FP64", "TFLOPS");
    return out;
}

// ---- CPUs ----

std::string field_value(const std::string& line) {
    auto colon = line.find(':');
    if (colon == std::string::npos) return {};
    std::string value = line.substr(colon + 1);
    value.erase(0, value.find_first_not_of(" \t"));
    return trim_end(value);
}

std::string vector_extensions(const std::string& flags) {
    static const std::pair<const char*, const char*> kKnown[] = {{"sse4_2", "SSE4.2"},
                                                                 {"avx", "AVX"},
                                                                 {"avx2", "AVX2"},
                                                                 {"fma", "FMA"},
                                                                 {"avx512f", "AVX-512F"},
                                                                 {"avx512bw", "AVX-512BW"},
                                                                 {"avx512_vnni", "AVX-512 VNNI"},
                                                                 {"avx512_bf16", "AVX-512 BF16"},
                                                                 {"amx_tile", "AMX"},
                                                                 {"asimd", "NEON (ASIMD)"},
                                                                 {"sve", "SVE"},
                                                                 {"sve2", "SVE2"}};
    std::set<std::string> present;
    std::istringstream words(flags);
    for (std::string word; words >> word;) present.insert(word);
    std::string out;
    for (const auto& [flag, name] : kKnown)
        if (present.count(flag)) out += (out.empty() ? "" : ", ") + std::string(name);
    return out;
}

}  // namespace

std::string builtin_prompt(std::string_view name) {
    std::string known;
    for (const auto* p = embedded::kBuiltinPrompts; p->name; ++p) {
        if (name == p->name) return p->text;
        known += (known.empty() ? "" : ", ") + std::string(p->name);
    }
    throw UsageError("no built-in prompt named \"" + std::string(name) + "\"",
                     "use one of: " + known);
}

std::string render(const std::string& template_text,
                   const std::map<std::string, std::string>& values) {
    std::string out;
    std::string_view rest = template_text;
    for (int number = 1; !rest.empty(); ++number) {
        std::size_t end = rest.find('\n');
        bool has_break = end != std::string_view::npos;
        std::string_view line = rest.substr(0, has_break ? end : rest.size());
        rest.remove_prefix(has_break ? end + 1 : rest.size());
        if (auto rendered = render_line(line, number, values))
            out += *rendered + (has_break ? "\n" : "");
    }
    return out;
}

std::string render_prompt(const std::string& template_text, const PromptInputs& inputs) {
    std::string backend(to_string(inputs.backend));
    return render(template_text,
                  {{"backend", backend},
                   {"problem_name", inputs.problem_name},
                   {"reference", trim_end(inputs.reference)},
                   {"example_reference", trim_end(builtin_prompt("examples/reference"))},
                   {"example_candidate", trim_end(builtin_prompt("examples/" + backend))},
                   {"hardware", hardware_section(inputs.hardware)},
                   {"few_shot", few_shot_section(inputs.backend, inputs.few_shot)}});
}

std::string render_refine(const std::string& template_text, int turn, const std::string& feedback) {
    return render(template_text,
                  {{"turn", std::to_string(turn)}, {"feedback", trim_end(feedback)}});
}

std::string hardware_description(const std::string& gpu_name,
                                 const std::optional<fs::path>& gpu_table) {
    if (gpu_name == "cpu") {
        std::ifstream in("/proc/cpuinfo");
        std::ostringstream text;
        text << in.rdbuf();
        return cpu_description(text.str());
    }
    integrity::GpuTable table;
    if (gpu_table) table.add_file(*gpu_table);
    json entry = table.lookup(gpu_name);
    if (entry.is_null())
        throw UsageError("no peak rates known for the GPU \"" + gpu_name +
                             "\"; the GPU table knows names containing: " + known_gpus(gpu_table),
                         "give a name the table knows, or add the GPU's entry with --gpu-peaks "
                         "FILE (the schema of data/gpus.json)");
    return gpu_description(entry);
}

std::string cpu_description(const std::string& cpuinfo) {
    std::string model, flags;
    int logical = 0;
    std::set<std::string> physical;  // "physical id/core id"
    std::string package;
    std::istringstream in(cpuinfo);
    for (std::string line; std::getline(in, line);) {
        std::string key = trim_end(line.substr(0, line.find(':')));
        if (key == "processor") ++logical;
        if (key == "model name" && model.empty()) model = field_value(line);
        if ((key == "flags" || key == "Features") && flags.empty()) flags = field_value(line);
        if (key == "physical id") package = field_value(line);
        if (key == "core id") physical.insert(package + "/" + field_value(line));
    }
    std::string out = "The program runs on the CPU";
    out += model.empty() ? "" : ": " + model;
    if (logical > 0) out += fmt::format(", {} logical cores", logical);
    if (!physical.empty()) out += fmt::format(" ({} physical)", physical.size());
    out += ".\n";
    if (std::string vectors = vector_extensions(flags); !vectors.empty())
        out += "Vector extensions: " + vectors + ".\n";
    return out;
}

std::vector<ExamplePair> load_few_shot(const fs::path& dir) {
    const std::string kReference = ".reference.py", kCandidate = ".candidate.py";
    std::map<std::string, std::pair<std::optional<fs::path>, std::optional<fs::path>>> halves;
    std::error_code error;
    for (const auto& item : fs::directory_iterator(dir, error)) {
        std::string file = item.path().filename().string();
        for (const auto& suffix : {kReference, kCandidate}) {
            if (file.size() <= suffix.size() || !file.ends_with(suffix)) continue;
            auto& pair = halves[file.substr(0, file.size() - suffix.size())];
            (suffix == kReference ? pair.first : pair.second) = item.path();
        }
    }
    const std::string hint = "give a folder of NAME" + kReference + " and NAME" + kCandidate +
                             " pairs (a reference program and a candidate for it)";
    if (error)
        throw UsageError("cannot read the few-shot folder " + dir.string() + ": " + error.message(),
                         hint);
    std::vector<ExamplePair> pairs;
    for (const auto& [name, pair] : halves) {
        if (!pair.first || !pair.second)
            throw UsageError("few-shot example " +
                                 (pair.first ? *pair.first : *pair.second).string() + " has no " +
                                 name + (pair.first ? kCandidate : kReference) + " beside it",
                             hint);
        pairs.push_back({read_file(*pair.first), read_file(*pair.second)});
    }
    if (pairs.empty())
        throw UsageError("the few-shot folder " + dir.string() + " holds no pair", hint);
    return pairs;
}

}  // namespace kbench::llm
