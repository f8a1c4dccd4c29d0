#include "orchestrator/engine/text.hpp"

#include <gtest/gtest.h>

#include <string>

namespace kbench::orchestrator {
namespace {

// A compile error's one line: a Python syntax error with the place its frame names; a log the
// candidate filled with one very long line is read without trouble.
TEST(FirstErrorLine, ASyntaxErrorSaysItsLine) {
    std::string log =
        "Traceback (most recent call last):\n"
        "  File \"<frozen importlib._bootstrap_external>\", line 936, in exec_module\n"
        "  File \"/tmp/kbench-check-x/work/build-1/cand.py\", line 5\n"
        "    def forward(self, x)\n"
        "                        ^\n"
        "SyntaxError: expected ':'\n";
    EXPECT_EQ(first_error_line(log), "SyntaxError: expected ':' (line 5 of cand.py)");
    EXPECT_EQ(first_error_line("x.cu(3): error: identifier \"y\" is undefined\n"),
              "x.cu(3): error: identifier \"y\" is undefined");
    std::string long_line(4 << 20, 'a');
    long_line += " File \"" + std::string(1 << 20, 'b');
    EXPECT_EQ(first_error_line(long_line + "\nSyntaxError: invalid syntax\n"),
              "SyntaxError: invalid syntax");
}

}  // namespace
}  // namespace kbench::orchestrator
