#include "process/bounded_output.hpp"

#include <gtest/gtest.h>

namespace kbench::sandbox {

TEST(BoundedOutput, SmallOutputIsKeptWhole) {
    BoundedOutput out(16, 16);
    out.append("hello ");
    out.append("world");
    EXPECT_EQ(out.text(), "hello world");
    EXPECT_EQ(out.dropped_bytes(), 0u);
}

TEST(BoundedOutput, MegabytesKeepHeadAndTail) {
    BoundedOutput out(100, 100);
    out.append("BEGIN");
    for (int i = 0; i < 10000; ++i) out.append(std::string(1000, 'x'));
    out.append("END");
    std::string text = out.text();
    EXPECT_EQ(out.total_bytes(), 5u + 10000u * 1000u + 3u);
    EXPECT_LT(text.size(), 400u);
    EXPECT_EQ(text.rfind("BEGIN", 0), 0u);
    EXPECT_EQ(text.substr(text.size() - 3), "END");
    EXPECT_NE(text.find("bytes of output dropped"), std::string::npos);
    EXPECT_EQ(out.dropped_bytes(), out.total_bytes() - 200u);
}

}  // namespace kbench::sandbox
