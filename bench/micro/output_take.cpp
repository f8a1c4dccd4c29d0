// What the judge does with a call's outputs when the reply comes, inside its clock: before
// 2026-12-04 a sum of the outputs' 64-bit words (checked again before the next request), now a
// copy into memory of its own (compared byte for byte before the next request). Side by side,
// one process, the same buffers, the median of 21 runs each:
//
//   g++ -O2 -o /tmp/output_take bench/micro/output_take.cpp && /tmp/output_take
//
// (-O2: kbench's default build, RelWithDebInfo.)
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

namespace {

std::uint64_t word_sum(const unsigned char* bytes, std::size_t n) {
    std::uint64_t sum = 0, word = 0;
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        std::memcpy(&word, bytes + i, 8);
        sum += word;
    }
    for (; i < n; ++i) sum += bytes[i];
    return sum;
}

template <typename F>
double median_ms(F&& f) {
    std::vector<double> ms;
    for (int run = 0; run < 21; ++run) {
        auto t0 = std::chrono::steady_clock::now();
        f();
        auto t1 = std::chrono::steady_clock::now();
        ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    }
    std::sort(ms.begin(), ms.end());
    return ms[ms.size() / 2];
}

}  // namespace

int main() {
    std::printf("%10s %12s %12s %12s %10s\n", "bytes", "sum_ms", "copy_ms", "compare_ms",
                "copy/sum");
    for (std::size_t n : {std::size_t(64) << 10, std::size_t(1) << 20, std::size_t(16) << 20,
                          std::size_t(256) << 20}) {
        std::vector<unsigned char> shared(n), own(n);
        for (std::size_t i = 0; i < n; ++i) shared[i] = (unsigned char)(i * 131 + 7);
        volatile std::uint64_t sink = 0;
        double sum = median_ms([&] { sink = sink + word_sum(shared.data(), n); });
        double copy = median_ms([&] { std::memcpy(own.data(), shared.data(), n); });
        double compare =
            median_ms([&] { sink = sink + std::memcmp(own.data(), shared.data(), n); });
        std::printf("%10zu %12.4f %12.4f %12.4f %10.2f\n", n, sum, copy, compare, copy / sum);
    }
}
