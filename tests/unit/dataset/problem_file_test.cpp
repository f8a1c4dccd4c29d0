#include "dataset/problem_file.hpp"

#include <gtest/gtest.h>

namespace kbench::dataset {

TEST(ProblemFile, LevelAndIdFromTheKernelBenchLayout) {
    auto id = identify_problem_file("KernelBench/level1/19_ReLU.py");
    EXPECT_EQ(id.name, "19_ReLU");
    EXPECT_EQ(id.level, 1);
    EXPECT_EQ(id.id, 19);
}

TEST(ProblemFile, PlainFilesHaveOnlyAName) {
    auto id = identify_problem_file("/tmp/my_problem.py");
    EXPECT_EQ(id.name, "my_problem");
    EXPECT_FALSE(id.level);
    EXPECT_FALSE(id.id);
}

}  // namespace kbench::dataset
