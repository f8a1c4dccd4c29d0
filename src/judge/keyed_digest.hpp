#pragma once

#include <cstdint>

#include "runtime/device.hpp"
#include "runtime/torch_common.hpp"

namespace kbench::worker {

// A keyed digest of a tensor's bytes, taken where the tensor lives: the sum, modulo 2^64, of
// its limbs (its bytes read as unsigned integers of at most 32 bits) each times a secret odd
// factor, K[i mod T] x c(i / T), K a table of T random words on the device and c a keyed mix.
// Without the key, a change to the bytes keeps the digest with a chance of about 2^-32 at most
// (a limb's change has at most 31 trailing zero bits, which an odd factor keeps). Digests of
// ranges add up to the whole's, so bytes read chunk by chunk (a comparison's) can be checked
// against a digest taken at once (a reply's): the judge keeps a digest of a reply, not a copy.
class KeyedDigest {
  public:
    explicit KeyedDigest(at::Device device);
    // This process's digest for its device, keyed once.
    static const KeyedDigest& for_device(const Device& device);

    // The whole tensor (any layout; made contiguous).
    std::uint64_t of(const at::Tensor& tensor) const;
    // chunk: elements [first, first + chunk.numel()) of a tensor's flat, contiguous view.
    std::uint64_t range(const at::Tensor& chunk, std::int64_t first) const;

  private:
    at::Tensor table_;  // T words, odd, on the device
    std::uint64_t key_ = 0;
};

}  // namespace kbench::worker
