#include "timing/cpu_timing_device.hpp"

#include <cstring>

namespace kbench::timing {

CpuTimingDevice::CpuTimingDevice(std::size_t thrash_bytes) : thrash_(thrash_bytes) {}

void CpuTimingDevice::flush_cache() {
    if (thrash_.empty()) return;
    std::memset(thrash_.data(), ++fill_, thrash_.size());
    // A read the compiler cannot drop, so the writes above stay.
    volatile unsigned char sink = thrash_[thrash_.size() / 2];
    (void)sink;
}

void CpuTimingDevice::start() {
    start_ = std::chrono::steady_clock::now();
}

void CpuTimingDevice::stop() {
    stop_ = std::chrono::steady_clock::now();
}

double CpuTimingDevice::stream_elapsed_us() {
    return std::chrono::duration<double, std::micro>(stop_ - start_).count();
}

}  // namespace kbench::timing
