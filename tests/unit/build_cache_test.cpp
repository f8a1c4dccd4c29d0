#include "build/build_cache.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

namespace kbench::build {

TEST(BuildCache, KeyDependsOnEveryInput) {
    std::string base = BuildCache::key("src", Backend::cuda, Precision::fp32, "tc");
    EXPECT_EQ(base.size(), 64u);
    EXPECT_EQ(base, BuildCache::key("src", Backend::cuda, Precision::fp32, "tc"));
    EXPECT_NE(base, BuildCache::key("src2", Backend::cuda, Precision::fp32, "tc"));
    EXPECT_NE(base, BuildCache::key("src", Backend::triton, Precision::fp32, "tc"));
    EXPECT_NE(base, BuildCache::key("src", Backend::cuda, Precision::bf16, "tc"));
    EXPECT_NE(base, BuildCache::key("src", Backend::cuda, Precision::fp32, "tc2"));
}

TEST(BuildCache, StoresAndFindsRecords) {
    fs::path root = make_temp_dir("kbench-test-cache-");
    BuildCache cache(root);
    std::string key = BuildCache::key("x", Backend::cpu, Precision::fp32, "t");
    EXPECT_FALSE(cache.lookup(key));
    cache.store(key, {"compile_error", "error: expected ';'", 1.5});
    auto found = cache.lookup(key);
    ASSERT_TRUE(found);
    EXPECT_EQ(found->status, "compile_error");
    EXPECT_EQ(found->log, "error: expected ';'");
    EXPECT_TRUE(cache.torch_extensions_dir(key).string().find(key) != std::string::npos);
    fs::remove_all(root);
}

TEST(BuildCache, LockIsExclusiveAcrossHolders) {
    fs::path root = make_temp_dir("kbench-test-lock-");
    BuildCache cache(root);
    std::atomic<int> inside{0}, worst{0};
    std::vector<std::thread> threads;
    for (int i = 0; i < 4; ++i)
        threads.emplace_back([&] {
            auto lock = cache.lock("k0000");
            int now = ++inside;
            worst = std::max(worst.load(), now);
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
            --inside;
        });
    for (auto& t : threads) t.join();
    EXPECT_EQ(worst.load(), 1);
    fs::remove_all(root);
}

}  // namespace kbench::build
