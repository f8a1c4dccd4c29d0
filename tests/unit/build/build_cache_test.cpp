#include "build/build_cache.hpp"

#include "core/files.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <fstream>
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
    cache.store(key, {BuildOutcome::compile_error, "error: expected ';'", 1.5});
    auto found = cache.lookup(key);
    ASSERT_TRUE(found);
    EXPECT_EQ(found->outcome, BuildOutcome::compile_error);
    EXPECT_EQ(found->log, "error: expected ';'");
    EXPECT_TRUE(cache.torch_extensions_dir(key).string().find(key) != std::string::npos);
    fs::remove_all(root);
}

// A build's log is the candidate's compiler or import output, in any bytes.
TEST(BuildCache, ALogThatIsNotUtf8IsStored) {
    fs::path root = make_temp_dir("kbench-test-cache-");
    BuildCache cache(root);
    std::string key = BuildCache::key("y", Backend::cpu, Precision::fp32, "t");
    cache.store(key, {BuildOutcome::ok, std::string("imported\xff"), 0.5});
    auto found = cache.lookup(key);
    ASSERT_TRUE(found);
    EXPECT_EQ(found->outcome, BuildOutcome::ok);
    EXPECT_EQ(found->log.rfind("imported", 0), 0u);
    fs::remove_all(root);
}

// A build's folder is the candidate's doing: only the modules a sandbox imports are kept, and
// only within a bound (a build that made ballast of its folder's quota leaves it behind).
TEST(BuildCache, OnlyTheModulesOfABuildAreKeptWithinABound) {
    fs::path root = make_temp_dir("kbench-test-cache-");
    BuildCache cache(root);
    std::string key = BuildCache::key("m", Backend::cuda, Precision::fp32, "t");
    fs::path built = root / "built";
    fs::create_directories(built / "relu");
    write_file_atomic(built / "relu" / "relu.so", "module");
    write_file_atomic(built / "relu" / "relu.cuda.o", "object");
    write_file_atomic(built / "relu" / "ballast.so", "not a module of its name");
    cache.store(key, {BuildOutcome::ok, "", 1.0}, built);
    auto found = cache.lookup(key);
    ASSERT_TRUE(found);
    ASSERT_EQ(found->files.size(), 1u);
    EXPECT_EQ(found->files.begin()->first, "relu/relu.so");
    EXPECT_FALSE(fs::exists(cache.torch_extensions_dir(key) / "relu" / "relu.cuda.o"));
    fs::path placed = root / "placed";
    EXPECT_TRUE(cache.place_modules(key, placed, nullptr));
    EXPECT_EQ(read_file(placed / "relu" / "relu.so"), "module");

    // A build folder, or a Triton cache, that is a link to elsewhere: nothing of it is kept.
    std::string linked = BuildCache::key("linked", Backend::cuda, Precision::fp32, "t");
    fs::create_directory_symlink(built, root / "link");
    cache.store(linked, {BuildOutcome::ok, "", 1.0}, root / "link");
    EXPECT_TRUE(cache.lookup(linked)->files.empty());
    EXPECT_FALSE(cache.keep_files(linked, "triton", root / "link"));

    // Over the bound (a sparse file: no disk is used for it), nothing is kept.
    std::string big = BuildCache::key("big", Backend::cuda, Precision::fp32, "t");
    fs::resize_file(built / "relu" / "relu.so", BuildCache::kMaxModuleBytes + 1);
    cache.store(big, {BuildOutcome::ok, "", 1.0}, built);
    ASSERT_TRUE(cache.lookup(big));
    EXPECT_TRUE(cache.lookup(big)->files.empty());
    EXPECT_FALSE(cache.place_modules(big, root / "placed-big", nullptr));
    fs::remove_all(root);
}

// Files a sandbox left for later sandboxes of its candidate: kept with their hashes, within
// bounds; a set too large or of too many files is not kept.
TEST(BuildCache, KeptFilesAreBounded) {
    fs::path root = make_temp_dir("kbench-test-cache-");
    BuildCache cache(root);
    std::string key = BuildCache::key("z", Backend::triton, Precision::fp32, "t");
    fs::path made = root / "made";
    fs::create_directories(made / "sub");
    write_file_atomic(made / "sub" / "kernel.cubin", "binary");
    EXPECT_TRUE(cache.keep_files(key, "triton", made));
    fs::path placed = root / "placed";
    EXPECT_TRUE(cache.place_files(key, "triton", placed));
    EXPECT_EQ(read_file(placed / "sub" / "kernel.cubin"), "binary");

    fs::path many = root / "many";
    fs::create_directories(many);
    for (std::size_t i = 0; i <= BuildCache::kMaxKeptFiles; ++i)
        write_file_atomic(many / std::to_string(i), "");
    EXPECT_FALSE(cache.keep_files(key, "many", many));
    EXPECT_FALSE(cache.place_files(key, "many", root / "placed-many"));

    fs::path large = root / "large";
    fs::create_directories(large);
    {
        std::ofstream big(large / "big");
        big.seekp(std::streamoff(BuildCache::kMaxKeptBytes));
        big.put('x');  // sparse: one byte over the bound
    }
    EXPECT_FALSE(cache.keep_files(key, "large", large));
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
