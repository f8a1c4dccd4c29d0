#include "core/files.hpp"

#include <gtest/gtest.h>

namespace kbench {
namespace {

TEST(Files, LastLineIsTheLastLineThatIsNotBlank) {
    EXPECT_EQ(last_line("one\ntwo\n\n  \n"), "two");
    EXPECT_EQ(last_line("only"), "only");
    EXPECT_EQ(last_line("\n \n"), "");
}

TEST(Files, ErrorLineIsAPythonTracebacksExceptionLine) {
    std::string traceback =
        "Traceback (most recent call last):\n  File \"c.py\", line 3, in forward\n"
        "    return ext.run(x)\nRuntimeError: kernel refused this input\n";
    EXPECT_EQ(error_line(traceback), "RuntimeError: kernel refused this input");
    // A message of several lines: the exception's own line, not its last one.
    EXPECT_EQ(error_line("Traceback (most recent call last):\n  File \"c.py\"\n"
                         "ValueError: bad shape\nexpected 3 dimensions\n"),
              "ValueError: bad shape");
    EXPECT_EQ(error_line("torch.OutOfMemoryError: CUDA out of memory.\n"),
              "torch.OutOfMemoryError: CUDA out of memory.");
}

TEST(Files, ErrorLineOfPyTorchsOwnErrorIsItsFirstLineNotAStackFrame) {
    std::string c10 =
        "CUDA error: invalid argument\nSearch for `cudaErrorInvalidValue' in https://docs\n"
        "For debugging consider passing CUDA_LAUNCH_BLOCKING=1\n\n"
        "Exception raised from copy_device_to_device at Copy.cu:337 (most recent call first):\n"
        "frame #0: c10::Error::Error(c10::SourceLocation) + 0x9d\n"
        "frame #29: _start + 0x25 (0x657a05 in python3)\n";
    EXPECT_EQ(error_line(c10), "CUDA error: invalid argument");
    EXPECT_EQ(
        error_line("Traceback (most recent call last):\n  File \"c.py\"\nRuntimeError: " + c10),
        "RuntimeError: CUDA error: invalid argument");
}

TEST(Files, ErrorLineOfOtherTextIsItsLastLine) {
    EXPECT_EQ(error_line("the sandbox died\nsignal 11\n"), "signal 11");
    EXPECT_EQ(error_line("Exception raised nowhere: none"), "Exception raised nowhere: none");
    EXPECT_EQ(error_line(""), "");
}

}  // namespace
}  // namespace kbench
