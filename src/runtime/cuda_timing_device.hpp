#pragma once

#include <cstddef>
#include <memory>

#include "timing/timing_device.hpp"

namespace kbench::worker {

// CUDA events on PyTorch's current stream, cudaDeviceSynchronize for the whole device, and an
// L2 flush: a device buffer rewritten with cudaMemsetAsync before each sample.
class CudaTimingDevice final : public timing::TimingDevice {
  public:
    explicit CudaTimingDevice(std::size_t flush_bytes);
    ~CudaTimingDevice() override;

    void flush_cache() override;
    void synchronize() override;
    void start() override;
    void stop() override;
    double stream_elapsed_us() override;
    bool has_stream_clock() const override { return true; }

  private:
    void* flush_buffer_ = nullptr;
    std::size_t flush_bytes_ = 0;
    int fill_ = 0;
    void* start_event_ = nullptr;
    void* stop_event_ = nullptr;
};

// The timing device for a worker's device; flush_bytes 0 picks twice the cache size.
std::unique_ptr<timing::TimingDevice> make_timing_device(const class Device& device,
                                                         std::size_t flush_bytes);

}  // namespace kbench::worker
