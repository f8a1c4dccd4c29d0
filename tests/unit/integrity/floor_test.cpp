#include "integrity/floor.hpp"

#include <gtest/gtest.h>

#include "core/files.hpp"

namespace kbench::integrity {
namespace {

TEST(GpuTable, MoreSpecificEntriesComeFirstAndUsersWin) {
    GpuTable table;
    auto name = [&](const std::string& device) {
        json e = table.lookup(device);
        return e.is_null() ? std::string("none") : e.value("name", std::string());
    };
    EXPECT_NE(name("NVIDIA H100 PCIe").find("PCIe"), std::string::npos);
    EXPECT_NE(name("NVIDIA H100 80GB HBM3").find("SXM"), std::string::npos);
    EXPECT_NE(name("NVIDIA H200").find("H200"), std::string::npos);
    EXPECT_NE(name("NVIDIA GH200 480GB").find("GH200"), std::string::npos);
    EXPECT_NE(name("NVIDIA A100-SXM4-40GB").find("40GB"), std::string::npos);
    EXPECT_NE(name("NVIDIA GeForce RTX 4090").find("4090"), std::string::npos);
    EXPECT_EQ(name("cpu"), "none");
    fs::path mine = fs::temp_directory_path() / "kbench-gpu-table-test.json";
    write_file_atomic(mine, R"({"gpus": [{"match": ["H200"], "name": "mine",
        "memory_bandwidth_GBps": {"datasheet": 1}}]})");
    table.add_file(mine);
    EXPECT_EQ(name("NVIDIA H200"), "mine");
    fs::remove(mine);
}

}  // namespace
}  // namespace kbench::integrity
