#include "core/elf_symbols.hpp"

#include <gtest/gtest.h>

#include "core/error.hpp"

namespace kbench {
namespace {

TEST(ElfSymbols, AnExecutableDefinesItsFunctions) {
    std::set<std::string> names = elf_function_names("/proc/self/exe");
    EXPECT_TRUE(names.count("main"));
    EXPECT_THROW(elf_function_names("/proc/self/status"), InfraError);
}

}  // namespace
}  // namespace kbench
