#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/config.hpp"
#include "core/files.hpp"

namespace kbench::llm {

// A reference program and a candidate for it, shown to the model as an example.
struct ExamplePair {
    std::string reference, candidate;
};

// What a first prompt is made of, besides its template.
struct PromptInputs {
    Backend backend = Backend::cuda;
    std::string problem_name;
    std::string reference;  // the problem's PyTorch source
    std::string hardware;   // hardware_description(...), or empty for no hardware section
    std::vector<ExamplePair> few_shot;
};

// A file of prompts/ compiled into kbench, by its path without the extension: "cuda", "triton",
// "cpu", "refine", "examples/reference", "examples/cuda", "examples/triton", "examples/cpu".
// Throws UsageError for another name.
std::string builtin_prompt(std::string_view name);

// The template with each {{name}} (spaces allowed inside the braces) replaced by values[name],
// in one pass: a value holding "{{...}}" is not expanded again. A placeholder alone on its line
// whose value is empty takes its line with it. Throws UsageError for a name values lacks, with
// its line and the known names. "{{" not followed by a name and "}}" is left as it is.
std::string render(const std::string& template_text,
                   const std::map<std::string, std::string>& values);

// A first prompt: the template rendered with {{backend}}, {{problem_name}}, {{reference}},
// {{example_reference}} and {{example_candidate}} (the built-in pair for the backend),
// {{hardware}} (a section, empty without hardware) and {{few_shot}} (a section of the extra
// pairs, empty without them).
std::string render_prompt(const std::string& template_text, const PromptInputs& inputs);

// The message after the model's previous answer: the template rendered with {{turn}} (the
// attempt the feedback is about, 1 for the first answer) and {{feedback}}.
std::string render_refine(const std::string& template_text, int turn, const std::string& feedback);

// The hardware a program will run on, in words: for a GPU its peak rates from the GPU table
// (the built-in one, with gpu_table's entries first: --gpu-peaks); for "cpu" the machine's CPU
// (/proc/cpuinfo). Throws UsageError for a GPU the table does not know, listing the names it does.
std::string hardware_description(const std::string& gpu_name,
                                 const std::optional<fs::path>& gpu_table);

// A CPU described from the text of /proc/cpuinfo: model, cores, vector extensions.
std::string cpu_description(const std::string& cpuinfo);

// The example pairs of a folder: NAME.reference.py with NAME.candidate.py, sorted by NAME; other
// files are ignored. Throws UsageError for a half without its other half, a folder that cannot be
// read or one that holds no pair.
std::vector<ExamplePair> load_few_shot(const fs::path& dir);

}  // namespace kbench::llm
