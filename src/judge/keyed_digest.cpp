#include "judge/keyed_digest.hpp"

#include <cstring>
#include <random>

#include "core/keyed_seeds.hpp"

namespace kbench::worker {
namespace {

constexpr std::int64_t kTableWords = std::int64_t(1) << 22;  // 32 MiB

std::uint64_t mix(std::uint64_t z) {
    z += 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

// The tensor's bytes as limbs of at most 32 bits (an element of 8 or 16 bytes is 2 or 4 limbs),
// flat and contiguous, not yet widened. Limbs are read zero-extended: a change to one limb then
// has at most 31 trailing zero bits, so no change survives an odd factor for every key (with
// 64-bit words, flipping the top bit of two words would: 2^63 x any odd factor is 2^63).
at::Tensor limbs_of(const at::Tensor& flat) {
    at::Tensor c = flat.contiguous();
    switch (c.element_size()) {
        case 1:
            return c.view(at::kByte);
        case 2:
            return c.view(at::kShort);
        default:
            return c.view(at::kInt);
    }
}

std::int64_t limbs_per_element(const at::Tensor& t) {
    return t.element_size() > 4 ? std::int64_t(t.element_size() / 4) : 1;
}

}  // namespace

KeyedDigest::KeyedDigest(at::Device device) {
    std::string seed = random_bytes(16);
    std::uint64_t table_seed = 0;
    std::memcpy(&key_, seed.data(), 8);
    std::memcpy(&table_seed, seed.data() + 8, 8);
    std::mt19937_64 random(table_seed);
    at::Tensor table = at::empty({kTableWords}, at::TensorOptions().dtype(at::kLong));
    auto* data = table.data_ptr<std::int64_t>();
    for (std::int64_t i = 0; i < kTableWords; ++i) data[i] = std::int64_t(random() | 1);
    table_ = table.to(device);
}

std::uint64_t KeyedDigest::range(const at::Tensor& chunk, std::int64_t first) const {
    if (chunk.numel() == 0) return 0;
    at::Tensor words = limbs_of(chunk.reshape(-1));
    std::int64_t n = words.numel();
    std::int64_t start = first * limbs_per_element(chunk);
    std::int64_t mask = (std::int64_t(1) << (8 * words.element_size())) - 1;
    std::uint64_t total = 0;
    for (std::int64_t done = 0; done < n;) {
        std::int64_t i = start + done;
        std::int64_t offset = i % kTableWords;
        std::int64_t length = std::min(n - done, kTableWords - offset);
        // Widened a table's length at a time (32 MiB), zero-extended; products and their sum
        // wrap modulo 2^64, whatever order the reduction takes.
        at::Tensor limbs = words.narrow(0, done, length).to(at::kLong).bitwise_and_(mask);
        std::int64_t part = limbs.mul_(table_.narrow(0, offset, length)).sum().item<std::int64_t>();
        std::uint64_t factor = mix(key_ ^ std::uint64_t(i / kTableWords)) | 1;
        total += factor * std::uint64_t(part);
        done += length;
    }
    return total;
}

const KeyedDigest& KeyedDigest::for_device(const Device& device) {
    static const KeyedDigest digest(device.torch_device());
    return digest;
}

std::uint64_t KeyedDigest::of(const at::Tensor& tensor) const {
    return range(tensor.contiguous().reshape(-1), 0);
}

}  // namespace kbench::worker
