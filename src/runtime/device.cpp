#include "runtime/device.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>

#ifdef KBENCH_WITH_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#include <cuda_runtime_api.h>
#endif

#include "core/settings.hpp"

namespace kbench::worker {
namespace {

// The largest CPU cache the kernel reports, for the CPU cache-thrashing buffer.
std::size_t cpu_cache_bytes() {
    std::size_t best = 0;
    for (int index = 0; index < 8; ++index) {
        std::ifstream in("/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index) +
                         "/size");
        std::string text;
        if (!(in >> text) || text.empty()) continue;
        std::size_t value = std::stoull(text);
        char unit = text.back();
        if (unit == 'K') value <<= 10;
        if (unit == 'M') value <<= 20;
        best = std::max(best, value);
    }
    return best > 0 ? best : std::size_t(32) << 20;
}

}  // namespace

std::uint64_t allocator_peak_bytes() {
#ifdef KBENCH_WITH_CUDA
    auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(0);
    return std::uint64_t(
        stats.reserved_bytes[std::size_t(c10::CachingAllocator::StatType::AGGREGATE)].peak);
#else
    return 0;
#endif
}

bool built_with_cuda() {
#ifdef KBENCH_WITH_CUDA
    return true;
#else
    return false;
#endif
}

void cuda_check(int error, const char* what) {
#ifdef KBENCH_WITH_CUDA
    if (error == cudaSuccess) return;
    auto e = static_cast<cudaError_t>(error);
    throw CudaError(std::string(what) + " failed: " + cudaGetErrorName(e) + ": " +
                    cudaGetErrorString(e));
#else
    if (error != 0) throw CudaError(std::string(what) + " failed");
#endif
}

Device Device::open(DeviceKind kind) {
    Device d;
    if (std::optional<std::string> share = setting("KBENCH_DEVICE_SHARE"))
        d.share_ = std::size_t(std::clamp(std::atoi(share->c_str()), 1, 64));
    if (kind == DeviceKind::cpu) {
        d.cache_bytes_ = cpu_cache_bytes();
        d.memory_bytes_ =
            std::size_t(::sysconf(_SC_PHYS_PAGES)) * std::size_t(::sysconf(_SC_PAGESIZE));
        d.info_ = {{"type", "cpu"},
                   {"name", "cpu"},
                   {"cores", ::sysconf(_SC_NPROCESSORS_ONLN)},
                   {"cache_bytes", d.cache_bytes_},
                   {"memory_bytes", d.memory_bytes_}};
        return d;
    }
#ifdef KBENCH_WITH_CUDA
    int count = 0;
    cuda_check(cudaGetDeviceCount(&count), "cudaGetDeviceCount");
    if (count < 1) throw CudaError("no CUDA device is visible");
    cuda_check(cudaSetDevice(0), "cudaSetDevice");
    cudaDeviceProp prop{};
    cuda_check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
    d.cuda_ = true;
    d.cache_bytes_ = std::size_t(prop.l2CacheSize);
    d.memory_bytes_ = prop.totalGlobalMem;
    d.info_ = {{"type", "cuda"},
               {"name", prop.name},
               {"capability", std::to_string(prop.major) + "." + std::to_string(prop.minor)},
               {"sm_count", prop.multiProcessorCount},
               {"l2_bytes", prop.l2CacheSize},
               {"memory_bytes", prop.totalGlobalMem},
               {"pci_bus_id", prop.pciBusID}};
    return d;
#else
    throw CudaError("this build of the kbench worker has no CUDA support");
#endif
}

at::Device Device::torch_device() const {
    return cuda_ ? at::Device(at::kCUDA, 0) : at::Device(at::kCPU);
}

void Device::synchronize() const {
#ifdef KBENCH_WITH_CUDA
    if (cuda_) cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
#endif
}

std::size_t Device::used_bytes() const {
#ifdef KBENCH_WITH_CUDA
    if (cuda_) {
        std::size_t free = 0, total = 0;
        cuda_check(cudaMemGetInfo(&free, &total), "cudaMemGetInfo");
        return total - free;
    }
#endif
    return 0;
}

json Device::describe() const {
    return info_;
}

void Device::check_health() const {
    synchronize();
    auto options = at::TensorOptions().device(torch_device()).dtype(at::kLong);
    std::int64_t sum = at::arange(1024, options).sum().item<std::int64_t>();
    synchronize();
    if (sum != 1024 * 1023 / 2)
        throw CudaError("device health check computed " + std::to_string(sum) +
                        " instead of 523776");
}

}  // namespace kbench::worker
