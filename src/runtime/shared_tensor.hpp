#pragma once

#include <memory>

#include "protocol/sandbox_messages.hpp"
#include "runtime/device.hpp"
#include "runtime/torch_common.hpp"

namespace kbench::worker {

// Memory the judge owns and a sandbox maps, named by a file descriptor that travels on the socket
// (there is no name for anyone to guess): a memfd on the CPU, device memory made through CUDA's
// virtual memory API and exported as a POSIX file descriptor on a GPU.
class SharedBuffer : public std::enable_shared_from_this<SharedBuffer> {
  public:
    static std::shared_ptr<SharedBuffer> allocate(std::size_t nbytes, const Device& device);
    // The segment of a RequestPool that holds tensor (offset: where the tensor starts in it), or
    // null. The buffer borrows the segment: the pool keeps it.
    static std::shared_ptr<SharedBuffer> segment_of(const at::Tensor& tensor, std::size_t& offset);
    ~SharedBuffer();
    SharedBuffer(const SharedBuffer&) = delete;
    SharedBuffer& operator=(const SharedBuffer&) = delete;

    // A tensor over this buffer; the tensor keeps the buffer alive.
    at::Tensor view(at::IntArrayRef sizes, at::IntArrayRef strides, at::ScalarType dtype);
    // How a sandbox finds it: fd_index is where the descriptor goes among the message's
    // descriptors; fd() is the descriptor to send.
    protocol::Buffer describe(std::int64_t fd_index) const;
    int fd() const { return fd_; }
    std::size_t nbytes() const { return nbytes_; }
    bool is_cuda() const { return cuda_; }

  private:
    SharedBuffer() = default;

    bool cuda_ = false;
    bool borrowed_ = false;  // a RequestPool's segment
    void* data_ = nullptr;
    std::size_t nbytes_ = 0;
    int fd_ = -1;
    std::size_t mapped_bytes_ = 0;  // a GPU buffer's size, rounded up to the granularity
    at::Device device_{at::kCPU};
};

// A private pool of PyTorch's allocator whose segments are device memory with descriptors of
// their own (CUDA's virtual memory API): inputs made within() it can be handed to a sandbox where
// they lie, with no copy, and no later allocation of the judge's ever lands in memory a sandbox
// was given. Its memory goes with it.
class RequestPool {
  public:
    // empty_all: its release empties PyTorch's whole cache (the judge's, whose checks' memory
    // goes back too); else only the pool's own segments go.
    explicit RequestPool(bool empty_all = true);
    ~RequestPool();
    RequestPool(const RequestPool&) = delete;
    RequestPool& operator=(const RequestPool&) = delete;

    // Runs make with the device allocations of this thread going to the pool.
    template <typename Make>
    auto within(Make&& make) {
        enter();
        struct Exit {
            RequestPool& pool;
            ~Exit() { pool.exit(); }
        } exit{*this};
        return make();
    }

    // Every later device allocation of this thread goes to the pool, for the process's life.
    void enter_for_good() { enter(); }

  private:
    void enter();
    void exit();
    py::object pool_;
    py::object context_;
    bool empty_all_ = true;
};

// Returns the device memory PyTorch's allocator caches but does not use (torch.cuda.empty_cache).
void empty_device_cache();

// A buffer as a sandbox maps it.
class MappedBuffer {
  public:
    // fd: the buffer's descriptor as received (owned from here on).
    MappedBuffer(const protocol::Buffer& buffer, int fd, const Device& device);
    ~MappedBuffer();
    MappedBuffer(const MappedBuffer&) = delete;
    MappedBuffer& operator=(const MappedBuffer&) = delete;

    // A tensor over the mapping; throws if the layout does not fit it.
    at::Tensor view(const protocol::TensorRef& ref) const;
    // The mapping's addresses, [begin, end).
    std::uintptr_t begin() const { return reinterpret_cast<std::uintptr_t>(data_); }
    std::uintptr_t end() const { return begin() + nbytes_; }
    // On a CPU, whether the mapping can be written: an output buffer is read-only but for
    // kbench's own copy into it. No effect on a GPU's.
    void set_writable(bool writable) const;

  private:
    bool cuda_ = false;
    void* data_ = nullptr;
    std::size_t nbytes_ = 0;
    std::size_t mapped_bytes_ = 0;
    at::Device device_{at::kCPU};
};

// Device memory of this process's shared buffers (cudaMalloc'd, outside PyTorch's allocator):
// what is allocated now, and the most since the last reset.
struct SharedDeviceBytes {
    std::size_t live = 0;
    std::size_t peak = 0;
};
SharedDeviceBytes shared_device_bytes();
void reset_shared_device_peak();

// Row-major strides for sizes.
std::vector<std::int64_t> row_major_strides(at::IntArrayRef sizes);

// Bytes of storage a strided layout touches.
std::size_t storage_bytes(at::IntArrayRef sizes, at::IntArrayRef strides, at::ScalarType dtype);

// The TensorRef for a view over a slot, offset bytes from its start.
protocol::TensorRef tensor_ref(std::uint64_t slot, const at::Tensor& view, std::size_t offset = 0);

// Fills a tensor with a recognisable poison: NaN for floating types, a fixed pattern otherwise.
void poison(at::Tensor& tensor);

// dst.copy_(src), as a plain memcpy where both are contiguous CPU tensors of one dtype.
void plain_copy(at::Tensor& dst, const at::Tensor& src);

// Bit-exact copy done by a kernel of the current device (not a copy engine), so that on a GPU it
// cannot run beside another process's kernels; falls back to copy_ where no integer view exists.
void exact_copy(at::Tensor& dst, const at::Tensor& src);

// Copies src into dst, of the same sizes, dtype and device, without PyTorch's dispatcher: a kernel
// that a candidate registered for aten::copy_ (torch.library) is never run by it. What a sandbox
// does after its timer stopped goes through here.
void undispatched_copy(at::Tensor& dst, const at::Tensor& src);

// A digest of a tensor's bytes (a sum of its words): what a sandbox reports of an output it
// copied. A sum can be kept while the bytes change: the judge never trusts it to see that
// nothing changed (KeyedDigest does).
std::int64_t digest(const at::Tensor& tensor);

// A tensor's bytes (made contiguous) as a flat tensor of the widest integers they divide into
// (64, 32, 16 or 8 bits): a GPU reads wide words several times faster than bytes or narrow
// words widened.
at::Tensor as_words(const at::Tensor& tensor);

}  // namespace kbench::worker
