// The feedback a model gets for its next turn.
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
    v.integrity.push_back({"torch_fallback", Severity::reject, "forward runs no kernel of its own",
                           12, "return torch.tanh(x)"});
    v.integrity.push_back({"stream_use", Severity::warn, "a side stream", 0, ""});
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
            {"rule", Severity::warn, std::string(5000, 'd'), 1, std::string(5000, 'e')});
    std::string text = feedback_text(failed);
    EXPECT_LE(text.size(), kFeedbackLimit);
    EXPECT_TRUE(contains(text, "[... 48000 more characters]"));
    EXPECT_TRUE(contains(text, "Output of the program (the last 11 of 100 lines):\n"));
    EXPECT_TRUE(contains(text, "| " + std::string(500, 'l') + " [... 2500 more characters]\n"));
    EXPECT_TRUE(contains(text, "Integrity findings:\n"));

    Verdict timed = verdict_of(Status::correct);
    for (int i = 0; i < 40; ++i)
        timed.integrity.push_back(
            {"rule", Severity::warn, std::string(5000, 'd'), 1, std::string(5000, 'e')});
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
