#include "core/keyed_seeds.hpp"

#include <gtest/gtest.h>

#include <set>

namespace kbench {
namespace {

std::string hex(const std::array<std::uint8_t, 32>& bytes) {
    static constexpr char kHex[] = "0123456789abcdef";
    std::string out;
    for (auto b : bytes) {
        out.push_back(kHex[b >> 4]);
        out.push_back(kHex[b & 0xf]);
    }
    return out;
}

// RFC 4231 test cases 1, 2 and 6 (a key longer than a block).
TEST(HmacSha256, Rfc4231Vectors) {
    EXPECT_EQ(hex(hmac_sha256(std::string(20, '\x0b'), "Hi There")),
              "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
    EXPECT_EQ(hex(hmac_sha256("Jefe", "what do ya want for nothing?")),
              "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
    EXPECT_EQ(hex(hmac_sha256(std::string(131, '\xaa'),
                              "Test Using Larger Than Block-Size Key - Hash Key First")),
              "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
}

TEST(KeyedSeeds, DependOnKeyPurposeAndIndexAndFitManualSeed) {
    KeyedSeeds a("key one"), b("key two");
    std::set<std::uint64_t> seen;
    for (std::uint64_t i = 0; i < 1000; ++i) {
        std::uint64_t s = a.seed("timed", i);
        EXPECT_LT(s, std::uint64_t(1) << 63);
        seen.insert(s);
        EXPECT_NE(s, b.seed("timed", i));
        EXPECT_NE(s, a.seed("trial", i));
        EXPECT_EQ(s, KeyedSeeds("key one").seed("timed", i));
    }
    EXPECT_EQ(seen.size(), 1000u);
}

TEST(KeyedSeeds, FreshKeysDiffer) {
    EXPECT_NE(KeyedSeeds::fresh().seed("x", 0), KeyedSeeds::fresh().seed("x", 0));
    EXPECT_EQ(random_bytes(32).size(), 32u);
}

TEST(KeyedSeeds, UniformDrawsCoverTheUnitInterval) {
    KeyedSeeds k("draws");
    double sum = 0, lo = 1, hi = 0;
    for (std::uint64_t i = 0; i < 4000; ++i) {
        double u = k.uniform("check", i);
        ASSERT_GE(u, 0.0);
        ASSERT_LT(u, 1.0);
        sum += u;
        lo = std::min(lo, u);
        hi = std::max(hi, u);
    }
    EXPECT_NEAR(sum / 4000, 0.5, 0.03);
    EXPECT_LT(lo, 0.01);
    EXPECT_GT(hi, 0.99);
}

}  // namespace
}  // namespace kbench
