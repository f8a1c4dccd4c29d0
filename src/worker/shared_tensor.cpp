#include "worker/shared_tensor.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#ifdef KBENCH_WITH_CUDA
#include <cuda_runtime_api.h>
#endif

namespace kbench::worker {
namespace {

std::string to_hex(const void* data, std::size_t size) {
    static constexpr char kHex[] = "0123456789abcdef";
    const auto* p = static_cast<const unsigned char*>(data);
    std::string out;
    for (std::size_t i = 0; i < size; ++i) {
        out.push_back(kHex[p[i] >> 4]);
        out.push_back(kHex[p[i] & 0xf]);
    }
    return out;
}

void from_hex(const std::string& text, void* out, std::size_t size) {
    if (text.size() != 2 * size) throw std::runtime_error("malformed IPC handle");
    auto* p = static_cast<unsigned char*>(out);
    for (std::size_t i = 0; i < size; ++i)
        p[i] = std::uint8_t(std::stoul(text.substr(2 * i, 2), nullptr, 16));
}

std::string unique_shm_name() {
    static std::atomic<unsigned> counter{0};
    return "/kbench-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
}

std::vector<std::int64_t> json_ints(const json& j) {
    return j.get<std::vector<std::int64_t>>();
}

}  // namespace

std::vector<std::int64_t> row_major_strides(at::IntArrayRef sizes) {
    std::vector<std::int64_t> strides(sizes.size());
    std::int64_t step = 1;
    for (std::size_t d = sizes.size(); d-- > 0;) {
        strides[d] = step;
        step *= std::max<std::int64_t>(sizes[d], 1);
    }
    return strides;
}

std::size_t storage_bytes(at::IntArrayRef sizes, at::IntArrayRef strides, at::ScalarType dtype) {
    std::int64_t last = 0;
    for (std::size_t i = 0; i < sizes.size(); ++i) {
        if (sizes[i] == 0) return 0;
        last += (sizes[i] - 1) * strides[i];
    }
    return std::size_t(last + 1) * c10::elementSize(dtype);
}

std::shared_ptr<SharedBuffer> SharedBuffer::allocate(std::size_t nbytes, const Device& device) {
    std::shared_ptr<SharedBuffer> buffer(new SharedBuffer());
    buffer->nbytes_ = std::max<std::size_t>(nbytes, 1);
    buffer->device_ = device.torch_device();
    if (device.is_cuda()) {
#ifdef KBENCH_WITH_CUDA
        buffer->cuda_ = true;
        cuda_check(cudaMalloc(&buffer->data_, buffer->nbytes_), "cudaMalloc of a shared buffer");
        cudaIpcMemHandle_t handle;
        cuda_check(cudaIpcGetMemHandle(&handle, buffer->data_), "cudaIpcGetMemHandle");
        buffer->ipc_handle_hex_ = to_hex(&handle, sizeof(handle));
        return buffer;
#endif
    }
    buffer->shm_name_ = unique_shm_name();
    int fd = ::shm_open(buffer->shm_name_.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd < 0) throw std::runtime_error("shm_open failed: " + std::string(std::strerror(errno)));
    if (::ftruncate(fd, off_t(buffer->nbytes_)) != 0) {
        int err = errno;
        ::close(fd);
        ::shm_unlink(buffer->shm_name_.c_str());
        throw std::runtime_error("cannot size shared memory to " + std::to_string(buffer->nbytes_) +
                                 " bytes: " + std::strerror(err) + " (is /dev/shm large enough?)");
    }
    void* data = ::mmap(nullptr, buffer->nbytes_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    ::close(fd);
    if (data == MAP_FAILED) {
        ::shm_unlink(buffer->shm_name_.c_str());
        throw std::runtime_error("mmap of shared memory failed: " +
                                 std::string(std::strerror(errno)));
    }
    buffer->data_ = data;
    return buffer;
}

SharedBuffer::~SharedBuffer() {
    if (!data_) return;
    if (cuda_) {
#ifdef KBENCH_WITH_CUDA
        cudaFree(data_);
#endif
        return;
    }
    ::munmap(data_, nbytes_);
    ::shm_unlink(shm_name_.c_str());
}

at::Tensor SharedBuffer::view(at::IntArrayRef sizes, at::IntArrayRef strides,
                              at::ScalarType dtype) {
    if (storage_bytes(sizes, strides, dtype) > nbytes_)
        throw std::runtime_error("tensor layout does not fit its shared buffer");
    auto keep = shared_from_this();
    return at::from_blob(
        data_, sizes, strides, [keep](void*) {}, at::TensorOptions().dtype(dtype).device(device_));
}

json SharedBuffer::descriptor(const at::Tensor& view) const {
    json buffer = cuda_ ? json{{"kind", "cuda_ipc"}, {"handle", ipc_handle_hex_}}
                        : json{{"kind", "shm"}, {"name", shm_name_}};
    buffer["nbytes"] = nbytes_;
    return json{{"buffer", buffer},
                {"sizes", to_vector(view.sizes())},
                {"strides", to_vector(view.strides())},
                {"dtype", dtype_name(view.scalar_type())}};
}

at::Tensor open_shared_tensor(const json& descriptor, const Device& device) {
    const json& buffer = descriptor.at("buffer");
    auto sizes = json_ints(descriptor.at("sizes"));
    auto strides = json_ints(descriptor.at("strides"));
    auto dtype = dtype_from_name(descriptor.at("dtype").get<std::string>());
    auto nbytes = buffer.at("nbytes").get<std::size_t>();
    auto options = at::TensorOptions().dtype(dtype).device(device.torch_device());
    if (buffer.at("kind") == "cuda_ipc") {
#ifdef KBENCH_WITH_CUDA
        cudaIpcMemHandle_t handle;
        from_hex(buffer.at("handle").get<std::string>(), &handle, sizeof(handle));
        void* data = nullptr;
        cuda_check(cudaIpcOpenMemHandle(&data, handle, cudaIpcMemLazyEnablePeerAccess),
                   "cudaIpcOpenMemHandle");
        return at::from_blob(
            data, sizes, strides, [](void* p) { cudaIpcCloseMemHandle(p); }, options);
#else
        throw std::runtime_error("CUDA IPC buffer in a worker built without CUDA");
#endif
    }
    int fd = ::shm_open(buffer.at("name").get<std::string>().c_str(), O_RDWR, 0600);
    if (fd < 0) throw std::runtime_error("shm_open failed: " + std::string(std::strerror(errno)));
    void* data = ::mmap(nullptr, nbytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    ::close(fd);
    if (data == MAP_FAILED)
        throw std::runtime_error("mmap of shared memory failed: " +
                                 std::string(std::strerror(errno)));
    return at::from_blob(
        data, sizes, strides, [nbytes](void* p) { ::munmap(p, nbytes); }, options);
}

void poison(at::Tensor& tensor) {
    if (tensor.numel() == 0) return;
    if (at::isFloatingType(tensor.scalar_type()) || at::isComplexType(tensor.scalar_type())) {
        tensor.fill_(std::numeric_limits<double>::quiet_NaN());
    } else if (tensor.scalar_type() == at::kBool) {
        tensor.fill_(true);
    } else {
        tensor.fill_(0x5a);
    }
}

}  // namespace kbench::worker
