#pragma once

#include <algorithm>
#include <cstddef>
#include <string>

#include "core/config.hpp"
#include "core/memory_plan.hpp"
#include "runtime/torch_common.hpp"

namespace kbench::worker {

// Thrown when the CUDA runtime reports an error; the message names it.
class CudaError : public std::runtime_error {
    using std::runtime_error::runtime_error;
};

// The one device a worker process uses. Workers see a single GPU (the orchestrator narrows
// CUDA_VISIBLE_DEVICES), so CUDA is always ordinal 0 here.
class Device {
  public:
    static Device open(DeviceKind kind);

    bool is_cuda() const { return cuda_; }
    at::Device torch_device() const;
    std::string torch_name() const { return cuda_ ? "cuda:0" : "cpu"; }

    void synchronize() const;  // every stream of the device
    json describe() const;
    std::size_t cache_bytes() const { return cache_bytes_; }
    std::size_t memory_bytes() const { return memory_bytes_; }
    // What a judge keeps of reference calls for reuse: on a GPU, at most the memory plan's
    // allowance for them (kKeptCallsBytes), so that a problem's calls are made again rather than
    // kept beside the next ones; on a CPU a quarter of the memory. Either is divided among the
    // judges that share the device ($KBENCH_DEVICE_SHARE, set by kbench baseline --jobs).
    std::size_t reference_cache_bytes() const {
        std::size_t quarter = memory_bytes_ / 4 / share_;
        return cuda_ ? std::min<std::size_t>(quarter, kKeptCallsBytes / share_) : quarter;
    }

    // The device's memory in use by every process (its total less what is free); 0 on a CPU.
    std::size_t used_bytes() const;

    // A small known computation; throws if the device cannot run it.
    void check_health() const;

  private:
    bool cuda_ = false;
    std::size_t cache_bytes_ = 0;
    std::size_t memory_bytes_ = 0;
    std::size_t share_ = 1;
    json info_;
};

// The most device memory PyTorch's allocator of this process has held (its cache included);
// read without Python, so that no function a candidate replaced runs. 0 without CUDA.
std::uint64_t allocator_peak_bytes();

// Throws CudaError naming the call and the error, with the CUDA error's own name.
void cuda_check(int error, const char* what);

// True when the extension was built with CUDA support.
bool built_with_cuda();

}  // namespace kbench::worker
