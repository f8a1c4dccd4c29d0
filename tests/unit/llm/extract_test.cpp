// Extraction of a candidate program from a model's answer.
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

}  // namespace
}  // namespace kbench::llm
