#pragma once

#include <chrono>
#include <cstddef>
#include <vector>

#include "timing/timing_device.hpp"

namespace kbench::timing {

// Host clock and a buffer written end to end before each sample, so that each call starts
// with caches holding none of its data.
class CpuTimingDevice final : public TimingDevice {
  public:
    explicit CpuTimingDevice(std::size_t thrash_bytes);

    void flush_cache() override;
    void synchronize() override {}
    void start() override;
    void stop() override;
    double stream_elapsed_us() override;
    bool has_stream_clock() const override { return false; }

  private:
    std::vector<unsigned char> thrash_;
    unsigned char fill_ = 0;
    std::chrono::steady_clock::time_point start_{}, stop_{};
};

}  // namespace kbench::timing
