#include "core/keyed_seeds.hpp"

#include <sys/random.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "core/sha256.hpp"

namespace kbench {
namespace {

std::string_view as_text(const std::array<std::uint8_t, 32>& bytes) {
    return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
}

std::uint64_t first_word(const std::array<std::uint8_t, 32>& bytes) {
    std::uint64_t word = 0;
    for (int i = 0; i < 8; ++i) word = word << 8 | bytes[std::size_t(i)];
    return word;
}

std::array<std::uint8_t, 32> mac(const std::string& key, std::string_view purpose,
                                 std::uint64_t index) {
    std::string message(purpose);
    message.push_back('\0');
    for (int i = 7; i >= 0; --i) message.push_back(char(index >> (8 * i)));
    return hmac_sha256(key, message);
}

}  // namespace

std::array<std::uint8_t, 32> hmac_sha256(std::string_view key, std::string_view message) {
    constexpr std::size_t kBlock = 64;
    std::string block(kBlock, '\0');
    if (key.size() > kBlock) {
        auto hashed = Sha256().update(key).digest();
        std::memcpy(block.data(), hashed.data(), hashed.size());
    } else {
        std::memcpy(block.data(), key.data(), key.size());
    }
    std::string inner_pad(kBlock, '\0'), outer_pad(kBlock, '\0');
    for (std::size_t i = 0; i < kBlock; ++i) {
        inner_pad[i] = char(block[i] ^ 0x36);
        outer_pad[i] = char(block[i] ^ 0x5c);
    }
    auto inner = Sha256().update(inner_pad).update(message).digest();
    return Sha256().update(outer_pad).update(as_text(inner)).digest();
}

std::string random_bytes(std::size_t count) {
    std::string out(count, '\0');
    std::size_t done = 0;
    while (done < count) {
        ssize_t n = ::getrandom(out.data() + done, count - done, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) throw std::runtime_error(std::string("getrandom: ") + std::strerror(errno));
        done += std::size_t(n);
    }
    return out;
}

KeyedSeeds KeyedSeeds::fresh() {
    return KeyedSeeds(random_bytes(32));
}

std::uint64_t KeyedSeeds::seed(std::string_view purpose, std::uint64_t index) const {
    return first_word(mac(key_, purpose, index)) >> 1;
}

double KeyedSeeds::uniform(std::string_view purpose, std::uint64_t index) const {
    return double(first_word(mac(key_, purpose, index)) >> 11) / double(std::uint64_t(1) << 53);
}

}  // namespace kbench
