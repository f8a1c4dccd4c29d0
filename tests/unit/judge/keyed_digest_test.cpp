#include "judge/keyed_digest.hpp"

#include <gtest/gtest.h>

#include <limits>

namespace kbench::worker {
namespace {

const KeyedDigest& cpu_digest() {
    static const KeyedDigest digest(at::Device(at::kCPU));
    return digest;
}

TEST(KeyedDigest, RangesAddUpToTheWhole) {
    // Past the table's 2^22 words, in pieces that do not line up with it.
    at::Tensor t =
        at::randn({(std::int64_t(1) << 22) + 1000}, at::TensorOptions().dtype(at::kFloat));
    const KeyedDigest& d = cpu_digest();
    std::uint64_t whole = d.of(t);
    std::uint64_t sum = 0;
    for (std::int64_t first = 0, step = 999'983; first < t.numel(); first += step) {
        std::int64_t n = std::min(step, t.numel() - first);
        sum += d.range(t.narrow(0, first, n), first);
    }
    EXPECT_EQ(sum, whole);
    EXPECT_EQ(d.range(t.narrow(0, 0, 0), 5), 0u);
}

TEST(KeyedDigest, EveryByteCounts) {
    const KeyedDigest& d = cpu_digest();
    for (at::ScalarType dtype : {at::kByte, at::kHalf, at::kFloat, at::kDouble, at::kLong}) {
        at::Tensor t = at::arange(64, at::TensorOptions().dtype(at::kLong)).to(dtype);
        std::uint64_t before = d.of(t);
        at::Tensor bytes = t.view(at::kByte);
        for (std::int64_t i = 0; i < bytes.numel(); i += 3) {
            for (int bit : {0, 7}) {
                std::uint8_t old = bytes[i].item<std::uint8_t>();
                bytes[i] = std::uint8_t(old ^ (1u << bit));
                EXPECT_NE(d.of(t), before) << "dtype " << dtype_name(dtype) << ", byte " << i;
                bytes[i] = old;
            }
        }
        EXPECT_EQ(d.of(t), before);
    }
}

TEST(KeyedDigest, SwappedElementsAndTheTopBitsOfTwoWordsChangeIt) {
    const KeyedDigest& d = cpu_digest();
    at::Tensor t = at::arange(1, 9, at::TensorOptions().dtype(at::kLong));
    std::uint64_t before = d.of(t);
    at::Tensor swapped = t.flip(0);
    EXPECT_NE(d.of(swapped), before);
    // Two 64-bit words with their top bits flipped: 2^63 times two odd factors cancel modulo 2^64;
    // read as 32-bit limbs they do not.
    at::Tensor top = t.clone();
    top[0].bitwise_xor_(std::numeric_limits<std::int64_t>::min());
    top[1].bitwise_xor_(std::numeric_limits<std::int64_t>::min());
    EXPECT_NE(d.of(top), before);
}

TEST(KeyedDigest, TheLayoutDoesNotMatterTheKeyDoes) {
    const KeyedDigest& d = cpu_digest();
    at::Tensor t = at::randn({64, 32});
    EXPECT_EQ(d.of(t.t()), d.of(t.t().contiguous()));
    const KeyedDigest other(at::Device(at::kCPU));
    EXPECT_NE(other.of(t), d.of(t));
}

}  // namespace
}  // namespace kbench::worker
