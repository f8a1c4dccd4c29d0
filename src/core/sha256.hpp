#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace kbench {

// SHA-256 (FIPS 180-4), for content addresses: problems, candidates, build keys.
class Sha256 {
  public:
    Sha256();
    Sha256& update(std::string_view data);
    std::array<std::uint8_t, 32> digest();  // finishes the hash; call once (or hex_digest)
    std::string hex_digest();

  private:
    void compress(const std::uint8_t* block);

    std::array<std::uint32_t, 8> state_;
    std::array<std::uint8_t, 64> buffer_{};
    std::size_t buffered_ = 0;
    std::uint64_t total_bytes_ = 0;
};

std::string sha256_hex(std::string_view data);

}  // namespace kbench
