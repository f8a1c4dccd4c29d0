#include "integrity/kernels.hpp"

#include <gtest/gtest.h>

namespace kbench::integrity {
namespace {

TEST(KernelNames, DemangledWithoutParameters) {
    EXPECT_EQ(kernel_display_name("_Z11relu_kernelPKfPfi"), "relu_kernel");
    EXPECT_EQ(kernel_display_name("add_kernel"), "add_kernel");
}

}  // namespace
}  // namespace kbench::integrity
