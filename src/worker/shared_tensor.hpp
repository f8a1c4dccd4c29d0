#pragma once

#include <memory>

#include "worker/device.hpp"
#include "worker/torch_common.hpp"

namespace kbench::worker {

// Memory the judge owns and a sandbox maps: POSIX shared memory on the CPU, a cudaMalloc
// allocation shared by CUDA IPC handle on a GPU.
class SharedBuffer : public std::enable_shared_from_this<SharedBuffer> {
  public:
    static std::shared_ptr<SharedBuffer> allocate(std::size_t nbytes, const Device& device);
    ~SharedBuffer();
    SharedBuffer(const SharedBuffer&) = delete;
    SharedBuffer& operator=(const SharedBuffer&) = delete;

    // A tensor over this buffer; the tensor keeps the buffer alive.
    at::Tensor view(at::IntArrayRef sizes, at::IntArrayRef strides, at::ScalarType dtype);
    // How a sandbox finds this buffer, with the tensor layout it should see.
    json descriptor(const at::Tensor& view) const;

  private:
    SharedBuffer() = default;

    bool cuda_ = false;
    void* data_ = nullptr;
    std::size_t nbytes_ = 0;
    std::string shm_name_;
    std::string ipc_handle_hex_;
    at::Device device_{at::kCPU};
};

// Row-major strides for sizes.
std::vector<std::int64_t> row_major_strides(at::IntArrayRef sizes);

// Bytes of storage a strided layout touches.
std::size_t storage_bytes(at::IntArrayRef sizes, at::IntArrayRef strides, at::ScalarType dtype);

// Sandbox side: maps a buffer from its descriptor; the tensor unmaps it when released.
at::Tensor open_shared_tensor(const json& descriptor, const Device& device);

// Fills a tensor with a recognisable poison: NaN for floating types, a fixed pattern otherwise.
void poison(at::Tensor& tensor);

}  // namespace kbench::worker
