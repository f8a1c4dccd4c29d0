// Prompt templates and their rendering, and the hardware description.
#include <gtest/gtest.h>

#include <fstream>
#include <functional>

#include "core/error.hpp"
#include "core/files.hpp"
#include "llm/extract.hpp"
#include "llm/feedback.hpp"
#include "llm/prompt.hpp"
#include "support/text_checks.hpp"

namespace kbench::llm {
namespace {

const fs::path kSource = KBENCH_TEST_SOURCE_DIR;

using test::contains;
using test::usage_error_of;
using test::write;

// ---- prompts ----

TEST(LlmPrompt, BuiltinPromptsAreThePromptsFolder) {
    for (const char* file : {"cuda.md", "triton.md", "cpu.md", "refine.md", "examples/reference.py",
                             "examples/cuda.py", "examples/triton.py", "examples/cpu.py"}) {
        std::string name = fs::path(file).replace_extension().string();
        EXPECT_EQ(builtin_prompt(name), read_file(kSource / "prompts" / file)) << file;
    }
}

TEST(LlmPrompt, AnUnknownBuiltinNameListsTheKnownOnes) {
    std::string error = usage_error_of([] { builtin_prompt("rocm"); });
    EXPECT_TRUE(contains(error, "\"rocm\"")) << error;
    EXPECT_TRUE(contains(error, "examples/triton")) << error;
}

TEST(LlmPrompt, RenderReplacesPlaceholdersWithSpacesInsideTheBraces) {
    EXPECT_EQ(render("a {{x}} b {{ y }} c {{\tx }}", {{"x", "1"}, {"y", "2"}}), "a 1 b 2 c 1");
}

TEST(LlmPrompt, ValuesAreNotExpandedAgain) {
    EXPECT_EQ(render("{{a}} {{b}}", {{"a", "{{b}}"}, {"b", "B"}}), "{{b}} B");
}

TEST(LlmPrompt, AnUnknownPlaceholderIsNamedWithItsLineAndTheKnownNames) {
    std::string error = usage_error_of([] {
        render("one\ntwo\nthree {{ refrence }}\n", {{"reference", ""}, {"hardware", ""}});
    });
    EXPECT_TRUE(contains(error, "{{refrence}}")) << error;
    EXPECT_TRUE(contains(error, "line 3")) << error;
    EXPECT_TRUE(contains(error, "{{hardware}}, {{reference}}")) << error;
}

TEST(LlmPrompt, BracesThatAreNotPlaceholdersStay) {
    const std::string text = "float a[2][2] = {{1, 2}, {3, 4}}; {{ }} {{x-y}} {{{v}}}";
    EXPECT_EQ(render(text, {{"v", "V"}}), "float a[2][2] = {{1, 2}, {3, 4}}; {{ }} {{x-y}} {V}");
}

TEST(LlmPrompt, AnEmptyPlaceholderAloneOnItsLineTakesTheLineWithIt) {
    std::map<std::string, std::string> values = {{"a", ""}, {"b", "B"}};
    EXPECT_EQ(render("x\n{{a}}\n  {{ a }}  \ny\n", values), "x\ny\n");
    EXPECT_EQ(render("x {{a}}\n{{b}}\n{{a}}", values), "x \nB\n");
}

const char* const kReference = R"(import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.tanh(x)


def get_inputs():
    return [torch.randn(64, 64)]


def get_init_inputs():
    return []
)";

TEST(LlmPrompt, EveryBackendsTemplateRendersWithTheReferenceAndItsExample) {
    for (Backend backend : {Backend::cuda, Backend::triton, Backend::cpu}) {
        std::string name(to_string(backend));
        PromptInputs in{backend, "7_Tanh", kReference, "", {}};
        std::string prompt = render_prompt(builtin_prompt(name), in);
        EXPECT_TRUE(contains(
            prompt, "# Your problem: 7_Tanh\n\n```python\n" + std::string(kReference) + "```\n"))
            << name;
        EXPECT_TRUE(contains(prompt, builtin_prompt("examples/reference"))) << name;
        EXPECT_TRUE(contains(prompt, builtin_prompt("examples/" + name))) << name;
        EXPECT_TRUE(contains(prompt, "ModelNew")) << name;
        EXPECT_FALSE(contains(prompt, "{{")) << name;
        EXPECT_FALSE(contains(prompt, "# Hardware")) << name;
        EXPECT_FALSE(contains(prompt, "# More examples")) << name;
        EXPECT_TRUE(contains(prompt, "```\n\n# Your problem")) << prompt;
    }
}

TEST(LlmPrompt, HardwareAndFewShotSectionsAppearWhenGiven) {
    PromptInputs in{Backend::cpu,
                    "7_Tanh",
                    kReference,
                    "The program runs on the CPU.\n",
                    {{"ref one\n", "cand one\n"}, {"ref two", "cand two"}}};
    std::string prompt = render_prompt(builtin_prompt("cpu"), in);
    EXPECT_TRUE(contains(prompt,
                         "# More examples\n\n## Example 1\n\nA reference program:\n\n"
                         "```python\nref one\n```\n\nA program with custom C++ code for "
                         "it:\n\n```python\ncand one\n```\n\n## Example 2\n"))
        << prompt;
    EXPECT_TRUE(contains(prompt,
                         "```python\ncand two\n```\n\n# Hardware\n\nThe program runs on "
                         "the CPU.\n\n# Your problem"))
        << prompt;
}

TEST(LlmPrompt, AFewShotFenceOutlastsTheBackticksInItsCode) {
    PromptInputs in{Backend::cuda, "p", "x", "", {{"s = '````'", "y"}}};
    EXPECT_TRUE(contains(render_prompt("{{few_shot}}", in), "`````python\ns = '````'\n`````\n"));
}

TEST(LlmPrompt, RefineCarriesTheTurnAndTheFeedback) {
    std::string message = render_refine(builtin_prompt("refine"), 2, "Status: incorrect\n\n");
    EXPECT_TRUE(contains(message, "(attempt 2)")) << message;
    EXPECT_TRUE(contains(message, "\n\nStatus: incorrect\n\nWrite the next")) << message;
    EXPECT_TRUE(contains(message, "```python")) << message;
}

TEST(LlmPrompt, AGpuIsDescribedFromTheBuiltInTable) {
    std::string text = hardware_description("NVIDIA H200", std::nullopt);
    EXPECT_TRUE(contains(text, "NVIDIA H200 SXM 141GB GPU")) << text;
    EXPECT_TRUE(contains(text, "- memory bandwidth: 4800 GB/s\n")) << text;
    EXPECT_TRUE(contains(text, "- FP32 (CUDA cores): ")) << text;
    EXPECT_TRUE(contains(text, "- BF16 tensor cores (dense): ")) << text;
    EXPECT_TRUE(contains(text, "- L2 cache: ")) << text;
}

TEST(LlmPrompt, AnUnknownGpuListsTheKnownNamesAndPointsToGpuPeaks) {
    std::string error = usage_error_of([] { hardware_description("Radeon 7900", std::nullopt); });
    EXPECT_TRUE(contains(error, "\"Radeon 7900\"")) << error;
    EXPECT_TRUE(contains(error, "H200")) << error;
    EXPECT_TRUE(contains(error, "--gpu-peaks")) << error;
}

TEST(LlmPrompt, AUsersGpuTableComesFirstAndMayGiveMemoryAndSms) {
    fs::path dir = make_temp_dir("kbench-test-llm-");
    write(dir / "gpus.json", R"({"gpus": [{"match": ["Mystery", "H200"], "name": "Mystery 48GB",
        "memory_GB": 48, "sm_count": 100, "memory_bandwidth_GBps": {"datasheet": 1000},
        "fp32_tflops": {"datasheet": 20.5}}]})");
    std::string text = hardware_description("NVIDIA H200", dir / "gpus.json");
    EXPECT_TRUE(contains(text, "one Mystery 48GB GPU")) << text;
    EXPECT_TRUE(contains(text, "- memory: 48 GB\n")) << text;
    EXPECT_TRUE(contains(text, "- streaming multiprocessors (SMs): 100")) << text;
    EXPECT_TRUE(contains(text, "- FP32 (CUDA cores): 20.5 TFLOPS\n")) << text;
    EXPECT_FALSE(contains(text, "TF32")) << text;
    std::string error = usage_error_of([&] { hardware_description("Other", dir / "gpus.json"); });
    EXPECT_TRUE(contains(error, "Mystery, H200")) << error;
    fs::remove_all(dir);
}

TEST(LlmPrompt, TheCpuIsDescribedFromCpuinfo) {
    const std::string cpuinfo =
        "processor\t: 0\nmodel name\t: Example CPU 9000\nphysical id\t: 0\ncore id\t\t: 0\n"
        "flags\t\t: fpu sse4_2 avx avx2 fma avx512f\n\n"
        "processor\t: 1\nmodel name\t: Example CPU 9000\nphysical id\t: 0\ncore id\t\t: 0\n"
        "flags\t\t: fpu sse4_2 avx avx2 fma avx512f\n";
    EXPECT_EQ(cpu_description(cpuinfo),
              "The program runs on the CPU: Example CPU 9000, 2 logical cores (1 physical).\n"
              "Vector extensions: SSE4.2, AVX, AVX2, FMA, AVX-512F.\n");
    EXPECT_TRUE(contains(hardware_description("cpu", std::nullopt), "The program runs on the CPU"));
}

TEST(LlmPrompt, FewShotPairsAreReadSortedByName) {
    fs::path dir = make_temp_dir("kbench-test-llm-");
    write(dir / "b.reference.py", "ref b");
    write(dir / "b.candidate.py", "cand b");
    write(dir / "a.reference.py", "ref a");
    write(dir / "a.candidate.py", "cand a");
    write(dir / "README.md", "ignored");
    auto pairs = load_few_shot(dir);
    ASSERT_EQ(pairs.size(), 2u);
    EXPECT_EQ(pairs[0].reference, "ref a");
    EXPECT_EQ(pairs[0].candidate, "cand a");
    EXPECT_EQ(pairs[1].candidate, "cand b");

    write(dir / "c.candidate.py", "cand c");
    std::string error = usage_error_of([&] { load_few_shot(dir); });
    EXPECT_TRUE(contains(error, "c.candidate.py has no c.reference.py")) << error;
    fs::remove_all(dir);
}

TEST(LlmPrompt, AFewShotFolderWithoutPairsIsAnError) {
    fs::path dir = make_temp_dir("kbench-test-llm-");
    EXPECT_TRUE(contains(usage_error_of([&] { load_few_shot(dir); }), "holds no pair"));
    EXPECT_TRUE(contains(usage_error_of([&] { load_few_shot(dir / "missing"); }), "cannot read"));
    fs::remove_all(dir);
}

}  // namespace
}  // namespace kbench::llm
