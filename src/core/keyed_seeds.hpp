#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace kbench {

// HMAC-SHA256 (RFC 2104) of message under key.
std::array<std::uint8_t, 32> hmac_sha256(std::string_view key, std::string_view message);

// Bytes from the kernel's random source (getrandom); throws if it fails.
std::string random_bytes(std::size_t count);

// Seeds for everything a candidate is shown: HMAC-SHA256 of (purpose, index) under a secret key
// that only the judge holds, cut to 63 bits (torch.manual_seed's range). Seeds it has seen tell
// a candidate nothing of the key, so nothing of the seeds to come.
class KeyedSeeds {
  public:
    static KeyedSeeds fresh();  // a new 256-bit key from the kernel
    explicit KeyedSeeds(std::string key) : key_(std::move(key)) {}

    std::uint64_t seed(std::string_view purpose, std::uint64_t index) const;
    // A secret draw in [0, 1), for choices the candidate must not predict.
    double uniform(std::string_view purpose, std::uint64_t index) const;

  private:
    std::string key_;
};

}  // namespace kbench
