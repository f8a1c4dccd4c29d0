// The language-model driver's text side: prompt templates and their rendering, the hardware
// description, extraction of a candidate from an answer, and the feedback for the next turn.
#include <gtest/gtest.h>

#include <fstream>
#include <functional>

#include "core/error.hpp"
#include "core/files.hpp"
#include "llm/extract.hpp"
#include "llm/feedback.hpp"
#include "llm/prompt.hpp"

namespace kbench::llm {
namespace {

const fs::path kSource = KBENCH_TEST_SOURCE_DIR;

bool contains(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

std::string usage_error_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const UsageError& e) {
        return std::string(e.what()) + " | " + e.hint();
    }
    ADD_FAILURE() << "no UsageError";
    return {};
}

void write(const fs::path& path, const std::string& text) {
    std::ofstream(path) << text;
}

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

// ---- extraction ----

const char* const kProgram = R"(import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.tanh(x)
)";

std::string fenced(const std::string& info, const std::string& code) {
    return "```" + info + "\n" + code + "```\n";
}

TEST(LlmExtract, AnEmptyAnswerIsAnError) {
    Extraction e = extract_candidate(" \n\t\n");
    EXPECT_FALSE(e.code);
    EXPECT_TRUE(contains(e.error, "the answer is empty")) << e.error;
    EXPECT_TRUE(contains(e.error, "```python")) << e.error;
}

TEST(LlmExtract, ProseThenAPythonBlockThenAnExplanation) {
    std::string answer = "I'll fuse the operations into one kernel.\n\n" +
                         fenced("python", kProgram) +
                         "\nThis version avoids two passes over memory.\n";
    Extraction e = extract_candidate(answer);
    ASSERT_TRUE(e.code) << e.error;
    EXPECT_EQ(*e.code, kProgram);
    EXPECT_TRUE(e.notes.empty());
    EXPECT_EQ(extraction_feedback(e), "");
}

TEST(LlmExtract, OfTwoProgramsTheLastIsTakenWithANote) {
    std::string fixed = std::string(kProgram) + "# fixed\n";
    std::string answer = "First try:\n" + fenced("python", kProgram) +
                         "Wait, that is wrong. Here is the fixed version:\n" +
                         fenced("python", fixed) + "Done.\n";
    Extraction e = extract_candidate(answer);
    ASSERT_TRUE(e.code);
    EXPECT_EQ(*e.code, fixed);
    ASSERT_EQ(e.notes.size(), 1u);
    EXPECT_TRUE(contains(e.notes[0], "2 code blocks define class ModelNew; the last one (line 12)"))
        << e.notes[0];
}

TEST(LlmExtract, CudaInACppBlockIsLeftOutWithANote) {
    std::string answer = "The kernel:\n" +
                         fenced("cpp", "__global__ void k(float* x) { x[0] = 1; }\n") +
                         "And the module that loads it:\n" + fenced("python", kProgram);
    Extraction e = extract_candidate(answer);
    ASSERT_TRUE(e.code);
    EXPECT_EQ(*e.code, kProgram);
    ASSERT_EQ(e.notes.size(), 1u);
    EXPECT_TRUE(contains(e.notes[0],
                         "left out 1 other code block(s) (cpp): only the block that "
                         "defines ModelNew is the program"))
        << e.notes[0];
    EXPECT_TRUE(contains(extraction_feedback(e),
                         "How your program was taken from the answer:\n- left out"));
}

TEST(LlmExtract, PythonBlocksBesideTheProgramAreLeftOutWithANote) {
    std::string answer = fenced("python", "import torch\nsource = '...'\n") +
                         fenced("python", kProgram) + fenced("", "x = ModelNew()(y)\n");
    Extraction e = extract_candidate(answer);
    ASSERT_TRUE(e.code);
    EXPECT_EQ(*e.code, kProgram);
    ASSERT_EQ(e.notes.size(), 1u);
    EXPECT_TRUE(contains(e.notes[0], "left out 2 other code block(s) (python and unlabelled)"))
        << e.notes[0];
}

TEST(LlmExtract, AnyInfoStringAndIndentedOrTildeFencesAreRead) {
    for (std::string info : {"python", "py", "Python3", "", " python title=\"x.py\""}) {
        Extraction e = extract_candidate(fenced(info, kProgram));
        ASSERT_TRUE(e.code) << info;
        EXPECT_EQ(*e.code, kProgram) << info;
    }
    Extraction tilde = extract_candidate("~~~python\n" + std::string(kProgram) + "~~~\n");
    ASSERT_TRUE(tilde.code);
    EXPECT_EQ(*tilde.code, kProgram);
    std::string indented = "1. The program:\n\n   ```python\n";
    for (const auto& line : {"   import torch", "   class ModelNew(nn.Module):", "       pass"})
        indented += std::string(line) + "\n";
    Extraction e = extract_candidate(indented + "   ```\n");
    ASSERT_TRUE(e.code);
    EXPECT_EQ(*e.code, "import torch\nclass ModelNew(nn.Module):\n    pass\n");
}

TEST(LlmExtract, ALongerFenceHoldsShorterOnes) {
    std::string code = "doc = '''\n```\n'''\nclass ModelNew(nn.Module):\n    pass\n";
    Extraction e = extract_candidate("````python\n" + code + "````\n");
    ASSERT_TRUE(e.code);
    EXPECT_EQ(*e.code, code);
}

std::string indented_by(const std::string& spaces, const std::string& code) {
    std::string out;
    std::size_t start = 0;
    for (std::size_t end; (end = code.find('\n', start)) != std::string::npos; start = end + 1)
        out += (end == start ? "" : spaces) + code.substr(start, end - start + 1);
    return out;
}

TEST(LlmExtract, AFenceIndentedFourOrMoreSpacesInAListItemIsRead) {
    std::string answer = "1. Here is the code:\n\n    ```python\n" + indented_by("    ", kProgram) +
                         "    ```\n2. Run it.\n";
    Extraction e = extract_candidate(answer);
    ASSERT_TRUE(e.code) << e.error;
    EXPECT_EQ(*e.code, kProgram);
    EXPECT_TRUE(e.notes.empty());
    // Code indented further than its fence loses the indentation all its lines share.
    e = extract_candidate(fenced("python", indented_by("  ", kProgram)));
    ASSERT_TRUE(e.code) << e.error;
    EXPECT_EQ(*e.code, kProgram);
}

TEST(LlmExtract, AFenceInsideATripleQuotedStringDoesNotCloseTheBlock) {
    const std::string code =
        "import torch\nsource = r\"\"\"\n```\n__global__ void k() {}\n\"\"\"\n\n\n"
        "class ModelNew(torch.nn.Module):\n    '''Use it as\n```\nModelNew()(x)\n```\n    '''\n";
    Extraction e = extract_candidate("Here:\n" + fenced("python", code) + "Done.\n");
    ASSERT_TRUE(e.code) << e.error;
    EXPECT_EQ(*e.code, code);
    EXPECT_TRUE(e.notes.empty());
    // Without a later fence, the string was never closed and the first fence closes the block.
    e = extract_candidate("```python\nclass ModelNew:\n    '''doc\n```\nThat is all.\n");
    ASSERT_TRUE(e.code) << e.error;
    EXPECT_EQ(*e.code, "class ModelNew:\n    '''doc\n");
    EXPECT_TRUE(e.notes.empty());
}

TEST(LlmExtract, AnUnclosedLastFenceIsTakenWithACutOffNote) {
    Extraction e = extract_candidate("Here it is:\n```python\n" + std::string(kProgram));
    ASSERT_TRUE(e.code);
    EXPECT_EQ(*e.code, kProgram);
    ASSERT_EQ(e.notes.size(), 1u);
    EXPECT_TRUE(contains(e.notes[0], "line 2 was never closed: the answer may have been cut off"))
        << e.notes[0];
}

TEST(LlmExtract, WithoutAFenceTheCodeIsTakenWithoutTheProseAroundIt) {
    const std::string code = R"(import torch
from torch.utils.cpp_extension import load_inline

source = r"""
__global__ void tanh_kernel(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = tanhf(x[i]);
}
"""
ext = load_inline(name="t", cpp_sources="", cuda_sources=source)


class ModelNew(torch.nn.Module):
    def forward(self, x):
        return ext.tanh(x)
)";
    std::string answer = "# Solution\n\nHere is my answer, using one kernel.\n\n" + code +
                         "\nThe kernel computes tanh in one pass.\nIt should be faster.\n";
    Extraction e = extract_candidate(answer);
    ASSERT_TRUE(e.code) << e.error;
    EXPECT_EQ(*e.code, code);
    ASSERT_EQ(e.notes.size(), 1u);
    EXPECT_TRUE(contains(e.notes[0], "no code fence: the program was taken from lines 5-19"))
        << e.notes[0];
}

TEST(LlmExtract, ReasoningIsRemovedFirst) {
    std::string answer = "<think>\nA draft:\n" + fenced("python", kProgram) +
                         "Better to fuse.\n</think>\n\n" +
                         fenced("python", std::string(kProgram) + "# final\n");
    Extraction e = extract_candidate(answer);
    ASSERT_TRUE(e.code);
    EXPECT_EQ(*e.code, std::string(kProgram) + "# final\n");
    EXPECT_TRUE(e.notes.empty());
    // Reasoning whose opening tag the provider left out.
    e = extract_candidate("thinking " + fenced("", "class Model:\n") + "</THINK>" +
                          fenced("", kProgram));
    ASSERT_TRUE(e.code);
    EXPECT_EQ(*e.code, kProgram);
}

TEST(LlmExtract, AStrayClosingTagAfterTheProgramIsRemovedAlone) {
    Extraction e = extract_candidate(fenced("python", kProgram) + "</think>");
    ASSERT_TRUE(e.code) << e.error;
    EXPECT_EQ(*e.code, kProgram);
    e = extract_candidate("Here it is.\n\n" + std::string(kProgram) + "\nThat is all.</think>\n");
    ASSERT_TRUE(e.code) << e.error;
    EXPECT_EQ(*e.code, kProgram);
    // Reasoning whose opening tag was left out, then an answer without a fence.
    e = extract_candidate("A draft:\nclass ModelNew:\n    pass\n</think>\n" +
                          std::string(kProgram));
    ASSERT_TRUE(e.code) << e.error;
    EXPECT_EQ(*e.code, kProgram);
}

TEST(LlmExtract, ThinkTagsInsideCodeAreKept) {
    const std::string code = std::string(kProgram) +
                             "\nTAGS = [\"<think>\", \"</think>\"]  # strip <think>\n"
                             "END = '</reasoning>'\nPROMPT = \"\"\"\n<thinking>\n\"\"\"\n";
    Extraction e = extract_candidate("<think>plan</think>\n" + fenced("python", code) +
                                     "<thinking>\ncheck\n</thinking>\nDone.\n");
    ASSERT_TRUE(e.code) << e.error;
    EXPECT_EQ(*e.code, code);
    EXPECT_TRUE(e.notes.empty());
}

TEST(LlmExtract, AnswersOfReasoningAloneAreErrors) {
    Extraction e = extract_candidate("<think>the kernel should");
    EXPECT_FALSE(e.code);
    EXPECT_TRUE(contains(e.error, "only reasoning")) << e.error;
    ASSERT_EQ(e.notes.size(), 1u);
    EXPECT_TRUE(contains(e.notes[0], "<think> was never closed")) << e.notes[0];
    std::string feedback = extraction_feedback(e);
    EXPECT_TRUE(contains(feedback, "No program was evaluated: the answer holds only reasoning"));
    EXPECT_TRUE(contains(feedback, "Also:\n- the answer ended inside its reasoning"));
}

TEST(LlmExtract, CodeWithoutModelNewNamesTheClassesItDefines) {
    std::string model = "class Model(nn.Module):\n    pass\nclass Helper:\n    pass\n";
    Extraction e = extract_candidate(fenced("python", model) + fenced("cpp", "int main() {}\n"));
    EXPECT_FALSE(e.code);
    EXPECT_TRUE(
        contains(e.error, "the 2 code blocks define Model and Helper, but no class ModelNew"))
        << e.error;
    e = extract_candidate(fenced("python", "import torch\n"));
    EXPECT_TRUE(contains(e.error, "the code block defines no class at all")) << e.error;
    e = extract_candidate("Just use\n\nclass Model(nn.Module):\n    pass\n");
    EXPECT_TRUE(contains(e.error, "the answer defines Model, but no class ModelNew")) << e.error;
    EXPECT_EQ(extraction_feedback(e), "No program was evaluated: " + e.error + "\n");
}

TEST(LlmExtract, AnAnswerWithoutCodeIsAnError) {
    Extraction e = extract_candidate("I cannot help with that.");
    EXPECT_FALSE(e.code);
    EXPECT_TRUE(contains(e.error, "no code block and no class ModelNew")) << e.error;
}

// ---- feedback ----

Verdict verdict_of(Status status, const std::string& reason = "") {
    Verdict v;
    v.problem = {1, 7, "7_Tanh", "abc"};
    v.status = status;
    v.reason = reason;
    return v;
}

TEST(LlmFeedback, ACorrectProgramGetsItsTimesSpeedupFloorAndKernels) {
    Verdict v = verdict_of(Status::correct);
    v.correctness = {5, 5, 1e-7, 2e-6};
    v.timing = TimingResult{812.5, 820, 800, 805, 830, 200, true, "median"};
    v.baseline = TimingResult{1625, 1630, 1600, 1610, 1650, 150, true, "median"};
    v.speedup = 2.0;
    v.speedup_ci95 = {1.95, 2.05};
    v.floor = {{"known", true},
               {"floor_us", 100.0},
               {"bound", "memory"},
               {"gpu", "NVIDIA H200"},
               {"speed_of_light", 0.123}};
    for (int i = 0; i < 20; ++i)
        v.kernels.push_back({"kernel_" + std::to_string(i), i == 19 ? "candidate" : "library",
                             0.01 * i, static_cast<std::uint64_t>(i + 1), 10.0 * i, "7"});
    std::string text = feedback_text(v);
    EXPECT_TRUE(contains(text, "Status: correct (the outputs match the reference's)\n")) << text;
    EXPECT_TRUE(contains(text, "Correctness: 5 of 5 trials passed")) << text;
    EXPECT_TRUE(contains(text,
                         "Timing: your program 812.5 us (median of 200 samples), the "
                         "baseline (PyTorch, eager) 1.625 ms\n"))
        << text;
    EXPECT_TRUE(contains(text, "Speedup: 2.000x (95% interval 1.950 to 2.050): faster")) << text;
    EXPECT_TRUE(contains(text,
                         "floor for this problem is 100.0 us (memory-bound on NVIDIA H200); "
                         "your program reaches 12.3% of it"))
        << text;
    EXPECT_TRUE(contains(text, "by total time (the first 15 of 20):")) << text;
    EXPECT_TRUE(contains(text, "     190.0   19.0%     20  candidate  kernel_19\n")) << text;
    EXPECT_LT(text.find("kernel_19"), text.find("kernel_18"));
    EXPECT_TRUE(contains(text, "kernel_5\n"));
    EXPECT_FALSE(contains(text, "kernel_4\n"));
    EXPECT_FALSE(contains(text, "Output of the program")) << text;
}

TEST(LlmFeedback, ASlowerProgramIsToldSoAndUnrecordedKernelsSayWhy) {
    Verdict v = verdict_of(Status::correct);
    v.correctness = {5, 5, 0, 0};
    v.timing = TimingResult{2000, 0, 0, 0, 0, 10, false, "median"};
    v.baseline = TimingResult{1000, 0, 0, 0, 0, 10, false, "median"};
    v.speedup = 0.5;
    v.kernel_activity = {{"collected", false}, {"why", "the device is a CPU"}};
    std::string text = feedback_text(v);
    EXPECT_TRUE(contains(text, "Speedup: 0.500x: slower than the baseline\n")) << text;
    EXPECT_TRUE(contains(text, "Kernels: not recorded (the device is a CPU)\n")) << text;
}

TEST(LlmFeedback, AnIncorrectProgramGetsTheTrialsDifferencesAndReasonVerbatim) {
    const std::string reason =
        "trial 2 output 0: 17 of 4096 values differ beyond atol=rtol=0.0001; largest difference "
        "0.5 (at 3, 17: got 1.5, expected 1)";
    Verdict v = verdict_of(Status::incorrect, reason);
    v.correctness = {1, 5, 0.5, 0.5};
    v.log = "some output\n";
    std::string text = feedback_text(v);
    EXPECT_TRUE(contains(text, "Status: incorrect (the outputs differ from the reference's)\n"));
    EXPECT_TRUE(contains(text, "Reason: " + reason + "\n")) << text;
    EXPECT_TRUE(contains(text,
                         "Correctness: 1 of 5 trials passed; max_abs_diff 0.5, "
                         "max_rel_diff 0.5"))
        << text;
    EXPECT_FALSE(contains(text, "Timing")) << text;
    EXPECT_FALSE(contains(text, "some output")) << text;
}

TEST(LlmFeedback, IntegrityFindingsCarryRuleSeverityLineAndEvidence) {
    Verdict v = verdict_of(Status::rejected, "torch_fallback: forward calls torch operators only");
    v.integrity.push_back({"torch_fallback", "reject", "forward runs no kernel of its own", 12,
                           "return torch.tanh(x)"});
    v.integrity.push_back({"stream_use", "warn", "a side stream", 0, ""});
    std::string text = feedback_text(v);
    EXPECT_TRUE(contains(text, "Status: rejected (the program broke an integrity rule)\n"));
    EXPECT_TRUE(contains(text,
                         "Integrity findings:\n- reject torch_fallback, line 12 (return "
                         "torch.tanh(x)): forward runs no kernel of its own\n- warn "
                         "stream_use: a side stream\n"))
        << text;
}

TEST(LlmFeedback, FailuresToBuildLoadOrRunShowTheOutputsTail) {
    for (Status status : {Status::compile_error, Status::load_error, Status::runtime_error,
                          Status::crash, Status::timeout}) {
        Verdict v = verdict_of(status, "it failed");
        v.log = "line one\nline two\n\n";
        std::string text = feedback_text(v);
        EXPECT_TRUE(contains(text,
                             "Reason: it failed\nOutput of the program:\n| line one\n| "
                             "line two\n"))
            << text;
    }
    Verdict infra = verdict_of(Status::infra_error, "the judge died");
    infra.log = "x\n";
    std::string text = feedback_text(infra);
    EXPECT_TRUE(contains(text, "(the evaluation itself failed, not the program)")) << text;
    EXPECT_FALSE(contains(text, "Output")) << text;
}

TEST(LlmFeedback, ALongCompilerOutputKeepsItsTailAndItsFirstErrors) {
    Verdict v = verdict_of(Status::compile_error, "the extension did not build");
    for (int i = 0; i < 300; ++i) {
        v.log += "line " + std::to_string(i) + "\n";
        if (i == 10) v.log += "kernel.cu(12): error: identifier \"blockIdx\" is undefined\n";
    }
    std::string text = feedback_text(v);
    EXPECT_TRUE(contains(text, "Output of the program (the last 80 of 301 lines):\n")) << text;
    EXPECT_TRUE(contains(text,
                         "Earlier lines that mention an error:\n| kernel.cu(12): error: "
                         "identifier \"blockIdx\" is undefined\nThen:\n| line 220\n"))
        << text;
    EXPECT_TRUE(contains(text, "| line 299\n")) << text;
    EXPECT_FALSE(contains(text, "| line 219\n")) << text;
}

TEST(LlmFeedback, EverythingIsCapped) {
    Verdict failed = verdict_of(Status::compile_error, std::string(50000, 'r'));
    for (int i = 0; i < 100; ++i) failed.log += std::string(3000, 'l') + "\n";
    for (int i = 0; i < 40; ++i)
        failed.integrity.push_back(
            {"rule", "warn", std::string(5000, 'd'), 1, std::string(5000, 'e')});
    std::string text = feedback_text(failed);
    EXPECT_LE(text.size(), kFeedbackLimit);
    EXPECT_TRUE(contains(text, "[... 48000 more characters]"));
    EXPECT_TRUE(contains(text, "Output of the program (the last 11 of 100 lines):\n"));
    EXPECT_TRUE(contains(text, "| " + std::string(500, 'l') + " [... 2500 more characters]\n"));
    EXPECT_TRUE(contains(text, "Integrity findings:\n"));

    Verdict timed = verdict_of(Status::correct);
    for (int i = 0; i < 40; ++i)
        timed.integrity.push_back(
            {"rule", "warn", std::string(5000, 'd'), 1, std::string(5000, 'e')});
    timed.timing = TimingResult{1, 1, 1, 1, 1, 1, true, "median"};
    for (int i = 0; i < 40; ++i)
        timed.kernels.push_back({std::string(5000, 'k'), "candidate", 0.1, 1, 1, ""});
    text = feedback_text(timed);
    EXPECT_LE(text.size(), kFeedbackLimit);
    EXPECT_TRUE(contains(text, "- and 32 more\n"));
    EXPECT_TRUE(contains(text, "(the first 15 of 40)"));
    EXPECT_TRUE(contains(text, "[... 4840 more characters]\n"));
}

}  // namespace
}  // namespace kbench::llm
