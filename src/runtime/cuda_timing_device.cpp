#include "runtime/cuda_timing_device.hpp"

#include "runtime/device.hpp"
#include "timing/cpu_timing_device.hpp"

#ifdef KBENCH_WITH_CUDA
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>
#endif

namespace kbench::worker {

#ifdef KBENCH_WITH_CUDA
namespace {

cudaStream_t current_stream() {
    return c10::cuda::getCurrentCUDAStream().stream();
}

}  // namespace

CudaTimingDevice::CudaTimingDevice(std::size_t flush_bytes) : flush_bytes_(flush_bytes) {
    cuda_check(cudaMalloc(&flush_buffer_, flush_bytes_), "cudaMalloc of the L2 flush buffer");
    cudaEvent_t start, stop;
    cuda_check(cudaEventCreate(&start), "cudaEventCreate");
    cuda_check(cudaEventCreate(&stop), "cudaEventCreate");
    start_event_ = start;
    stop_event_ = stop;
}

CudaTimingDevice::~CudaTimingDevice() {
    cudaEventDestroy(static_cast<cudaEvent_t>(start_event_));
    cudaEventDestroy(static_cast<cudaEvent_t>(stop_event_));
    cudaFree(flush_buffer_);
}

void CudaTimingDevice::flush_cache() {
    fill_ = (fill_ + 1) & 0xff;
    cuda_check(cudaMemsetAsync(flush_buffer_, fill_, flush_bytes_, current_stream()),
               "L2 flush (cudaMemsetAsync)");
}

void CudaTimingDevice::synchronize() {
    cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
}

void CudaTimingDevice::start() {
    cuda_check(cudaEventRecord(static_cast<cudaEvent_t>(start_event_), current_stream()),
               "cudaEventRecord");
}

void CudaTimingDevice::stop() {
    cuda_check(cudaEventRecord(static_cast<cudaEvent_t>(stop_event_), current_stream()),
               "cudaEventRecord");
}

double CudaTimingDevice::stream_elapsed_us() {
    float ms = 0;
    cuda_check(cudaEventElapsedTime(&ms, static_cast<cudaEvent_t>(start_event_),
                                    static_cast<cudaEvent_t>(stop_event_)),
               "cudaEventElapsedTime");
    return double(ms) * 1000.0;
}

#else

CudaTimingDevice::CudaTimingDevice(std::size_t) {
    throw CudaError("built without CUDA");
}
CudaTimingDevice::~CudaTimingDevice() = default;
void CudaTimingDevice::flush_cache() {}
void CudaTimingDevice::synchronize() {}
void CudaTimingDevice::start() {}
void CudaTimingDevice::stop() {}
double CudaTimingDevice::stream_elapsed_us() {
    return 0;
}

#endif

std::unique_ptr<timing::TimingDevice> make_timing_device(const Device& device,
                                                         std::size_t flush_bytes) {
    if (flush_bytes == 0) flush_bytes = 2 * device.cache_bytes();
    if (device.is_cuda()) return std::make_unique<CudaTimingDevice>(flush_bytes);
    return std::make_unique<timing::CpuTimingDevice>(flush_bytes);
}

}  // namespace kbench::worker
