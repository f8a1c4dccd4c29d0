// kbench prompt: the prompt templates, as compiled in or as a problem would be asked.
#include <iostream>

#include "build/toolchain.hpp"
#include "cli/commands.hpp"
#include "cli/selection_options.hpp"
#include "core/error.hpp"
#include "core/files.hpp"
#include "llm/generator.hpp"
#include "llm/prompt.hpp"

namespace kbench::cli {
namespace {

struct PromptOptions {
    SelectionOptions selection;
    std::string template_name;
    std::string backend = "cuda";
    std::string prompt;
    std::string hardware;
    std::optional<std::string> gpu_peaks;
    std::optional<std::string> few_shot;
    std::optional<std::string> python;
};

int run_prompt(const PromptOptions& o) {
    if (!o.template_name.empty()) {
        std::cout << llm::builtin_prompt(o.template_name);
        return 0;
    }
    Backend backend = parse_backend(o.backend);
    llm::GenerationSettings settings;
    settings.prompt_template =
        o.prompt.empty() ? llm::builtin_prompt(o.backend) : read_file(o.prompt);
    if (!o.hardware.empty())
        settings.hardware = llm::hardware_description(
            o.hardware, o.gpu_peaks ? std::optional<fs::path>(*o.gpu_peaks) : std::nullopt);
    if (o.few_shot) settings.few_shot = llm::load_few_shot(*o.few_shot);
    auto problems = selected_problems(o.selection, build::find_python(o.python));
    for (std::size_t i = 0; i < problems.size(); ++i) {
        if (problems.size() > 1)
            std::cout << (i ? "\n" : "") << "===== level " << problems[i].level << " problem "
                      << problems[i].id << " (" << problems[i].name << ") =====\n";
        for (const auto& m : llm::first_messages(settings, problems[i], backend))
            std::cout << m.content;
    }
    return 0;
}

}  // namespace

Command add_prompt_command(CLI::App& app) {
    auto o = std::make_shared<PromptOptions>();
    CLI::App* cmd = app.add_subcommand(
        "prompt", "Print a prompt template, or the prompt a problem would be asked with");
    add_selection_options(cmd, o->selection);
    cmd->add_option("--template", o->template_name,
                    "Print the built-in template or example as it is: cuda, triton, cpu, refine, "
                    "examples/reference, examples/cuda, ... (copy it to edit it)");
    cmd->add_option("--backend", o->backend, "cuda, triton or cpu")
        ->capture_default_str()
        ->check(CLI::IsMember({"cuda", "triton", "cpu"}));
    cmd->add_option("--prompt", o->prompt, "A template of your own to render")
        ->check(CLI::ExistingFile);
    cmd->add_option("--hardware", o->hardware, "A GPU of the GPU table, or cpu");
    cmd->add_option("--gpu-peaks", o->gpu_peaks, "A GPU table of your own for --hardware")
        ->check(CLI::ExistingFile);
    cmd->add_option("--few-shot", o->few_shot, "A folder of example pairs")
        ->check(CLI::ExistingDirectory);
    cmd->add_option("--python", o->python, "The Python that reads Parquet problem sets");
    return [o] { return run_prompt(*o); };
}

}  // namespace kbench::cli
