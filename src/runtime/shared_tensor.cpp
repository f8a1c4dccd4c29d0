#include "runtime/shared_tensor.hpp"
#include "runtime/python.hpp"

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>

#include <ATen/native/Copy.h>

#ifdef KBENCH_WITH_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#include <cuda.h>
#include <cuda_runtime_api.h>
#endif

namespace kbench::worker {
namespace {

// The integer type of the same width, for bit-exact kernels over any dtype.
std::optional<at::ScalarType> same_width_integer(at::ScalarType type) {
    switch (c10::elementSize(type)) {
        case 1:
            return at::kByte;
        case 2:
            return at::kShort;
        case 4:
            return at::kInt;
        case 8:
            return at::kLong;
        default:
            return std::nullopt;
    }
}

#ifdef KBENCH_WITH_CUDA
// CUDA's driver API, reached through the runtime (cudaGetDriverEntryPointByVersion), so that the
// worker loads on machines without a GPU driver.
struct Driver {
    decltype(&::cuGetErrorName) GetErrorName = nullptr;
    decltype(&::cuMemGetAllocationGranularity) MemGetAllocationGranularity = nullptr;
    decltype(&::cuMemAddressReserve) MemAddressReserve = nullptr;
    decltype(&::cuMemMap) MemMap = nullptr;
    decltype(&::cuMemSetAccess) MemSetAccess = nullptr;
    decltype(&::cuMemUnmap) MemUnmap = nullptr;
    decltype(&::cuMemAddressFree) MemAddressFree = nullptr;
    decltype(&::cuMemCreate) MemCreate = nullptr;
    decltype(&::cuMemExportToShareableHandle) MemExportToShareableHandle = nullptr;
    decltype(&::cuMemRelease) MemRelease = nullptr;
    decltype(&::cuMemImportFromShareableHandle) MemImportFromShareableHandle = nullptr;
};

const Driver& drv() {
    static const Driver driver = [] {
        auto entry = [](const char* name) {
            void* fn = nullptr;
            cudaDriverEntryPointQueryResult found{};
            cudaError_t error =
                cudaGetDriverEntryPointByVersion(name, &fn, 12000, cudaEnableDefault, &found);
            if (error != cudaSuccess || found != cudaDriverEntryPointSuccess || !fn)
                throw CudaError(std::string("the CUDA driver has no ") + name);
            return fn;
        };
        Driver d;
        d.GetErrorName = reinterpret_cast<decltype(&::cuGetErrorName)>(entry("cuGetErrorName"));
        d.MemGetAllocationGranularity =
            reinterpret_cast<decltype(&::cuMemGetAllocationGranularity)>(
                entry("cuMemGetAllocationGranularity"));
        d.MemAddressReserve =
            reinterpret_cast<decltype(&::cuMemAddressReserve)>(entry("cuMemAddressReserve"));
        d.MemMap = reinterpret_cast<decltype(&::cuMemMap)>(entry("cuMemMap"));
        d.MemSetAccess = reinterpret_cast<decltype(&::cuMemSetAccess)>(entry("cuMemSetAccess"));
        d.MemUnmap = reinterpret_cast<decltype(&::cuMemUnmap)>(entry("cuMemUnmap"));
        d.MemAddressFree =
            reinterpret_cast<decltype(&::cuMemAddressFree)>(entry("cuMemAddressFree"));
        d.MemCreate = reinterpret_cast<decltype(&::cuMemCreate)>(entry("cuMemCreate"));
        d.MemExportToShareableHandle = reinterpret_cast<decltype(&::cuMemExportToShareableHandle)>(
            entry("cuMemExportToShareableHandle"));
        d.MemRelease = reinterpret_cast<decltype(&::cuMemRelease)>(entry("cuMemRelease"));
        d.MemImportFromShareableHandle =
            reinterpret_cast<decltype(&::cuMemImportFromShareableHandle)>(
                entry("cuMemImportFromShareableHandle"));
        return d;
    }();
    return driver;
}

void cu_check(CUresult result, const char* what) {
    if (result == CUDA_SUCCESS) return;
    const char* name = nullptr;
    drv().GetErrorName(result, &name);
    throw CudaError(std::string(what) +
                    " failed: " + (name ? name : "CUresult " + std::to_string(int(result))));
}

// Device memory through CUDA's virtual memory API, shareable as a POSIX file descriptor: the
// descriptor travels on the socket (nobody else can name the memory), and the memory lives while
// any process maps it, so the judge may release a buffer that a sandbox still maps.
CUmemAllocationProp vmm_properties() {
    int device = 0;
    cuda_check(cudaGetDevice(&device), "cudaGetDevice");
    CUmemAllocationProp prop{};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = device;
    prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    return prop;
}

std::size_t vmm_size(std::size_t nbytes, const CUmemAllocationProp& prop) {
    std::size_t granularity = 0;
    cu_check(
        drv().MemGetAllocationGranularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
        "cuMemGetAllocationGranularity");
    return (nbytes + granularity - 1) / granularity * granularity;
}

// Maps handle's size bytes read-write for this device at a fresh address.
void* vmm_map(CUmemGenericAllocationHandle handle, std::size_t size,
              const CUmemAllocationProp& prop) {
    CUdeviceptr address = 0;
    cu_check(drv().MemAddressReserve(&address, size, 0, 0, 0), "cuMemAddressReserve");
    CUresult mapped = drv().MemMap(address, size, 0, handle, 0);
    if (mapped != CUDA_SUCCESS) {
        drv().MemAddressFree(address, size);
        cu_check(mapped, "cuMemMap");
    }
    CUmemAccessDesc access{};
    access.location = prop.location;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    CUresult allowed = drv().MemSetAccess(address, size, &access, 1);
    if (allowed != CUDA_SUCCESS) {
        drv().MemUnmap(address, size);
        drv().MemAddressFree(address, size);
        cu_check(allowed, "cuMemSetAccess");
    }
    return reinterpret_cast<void*>(address);
}

void vmm_unmap(void* data, std::size_t size) {
    auto address = reinterpret_cast<CUdeviceptr>(data);
    drv().MemUnmap(address, size);
    drv().MemAddressFree(address, size);
}

// nbytes of new device memory, exported as fd (owned by the caller) and mapped here; mapped is
// its size as rounded up to the granularity.
void* vmm_create(std::size_t nbytes, int& fd, std::size_t& mapped) {
    CUmemAllocationProp prop = vmm_properties();
    mapped = vmm_size(nbytes, prop);
    CUmemGenericAllocationHandle handle = 0;
    cu_check(drv().MemCreate(&handle, mapped, &prop, 0), "cuMemCreate of a shared buffer");
    fd = -1;
    CUresult exported =
        drv().MemExportToShareableHandle(&fd, handle, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
    if (exported != CUDA_SUCCESS) {
        drv().MemRelease(handle);
        cu_check(exported, "cuMemExportToShareableHandle");
    }
    void* data = nullptr;
    try {
        data = vmm_map(handle, mapped, prop);
    } catch (...) {
        drv().MemRelease(handle);
        ::close(fd);
        throw;
    }
    // The mapping holds the memory from here on; the descriptor is what a sandbox maps.
    drv().MemRelease(handle);
    return data;
}

// The segments PyTorch's allocator took through kbench_vmm_malloc (a request's inputs), by
// address.
struct Segment {
    int fd = -1;
    std::size_t mapped = 0;
};
std::mutex segments_mutex;
std::map<std::uintptr_t, Segment>& segments() {
    static std::map<std::uintptr_t, Segment> all;
    return all;
}
#endif

}  // namespace

namespace {

std::atomic<std::int64_t> shared_live{0}, shared_peak{0};

[[maybe_unused]] void count_shared_device_bytes(std::int64_t change) {
    std::int64_t now = shared_live += change;
    std::int64_t peak = shared_peak.load();
    while (now > peak && !shared_peak.compare_exchange_weak(peak, now)) {
    }
}

}  // namespace

SharedDeviceBytes shared_device_bytes() {
    return {std::size_t(shared_live.load()), std::size_t(shared_peak.load())};
}

void reset_shared_device_peak() {
    shared_peak = shared_live.load();
}

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
        if (sizes[i] < 0 || strides[i] < 0) throw std::runtime_error("negative size or stride");
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
        buffer->data_ = vmm_create(buffer->nbytes_, buffer->fd_, buffer->mapped_bytes_);
        // The sandbox maps the whole, rounded up to the granularity: nothing of what the
        // memory held before (the judge's own, freed) in the part no view covers.
        cuda_check(cudaMemset(static_cast<char*>(buffer->data_) + buffer->nbytes_, 0,
                              buffer->mapped_bytes_ - buffer->nbytes_),
                   "cudaMemset of a shared buffer's tail");
        count_shared_device_bytes(std::int64_t(buffer->mapped_bytes_));
        return buffer;
#endif
    }
    int fd = ::memfd_create("kbench", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0) throw std::runtime_error("memfd_create: " + std::string(std::strerror(errno)));
    // Sealed at its size: a sandbox that shrank it would leave the judge's mapping without pages
    // (SIGBUS in the judge).
    if (::ftruncate(fd, off_t(buffer->nbytes_)) != 0 ||
        ::fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
        int err = errno;
        ::close(fd);
        throw std::runtime_error("cannot size and seal shared memory of " +
                                 std::to_string(buffer->nbytes_) + " bytes: " + std::strerror(err));
    }
    void* data = ::mmap(nullptr, buffer->nbytes_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (data == MAP_FAILED) {
        int err = errno;
        ::close(fd);
        throw std::runtime_error("mmap of shared memory: " + std::string(std::strerror(err)));
    }
    buffer->fd_ = fd;
    buffer->data_ = data;
    return buffer;
}

SharedBuffer::~SharedBuffer() {
    if (!data_ || borrowed_) return;
    if (cuda_) {
#ifdef KBENCH_WITH_CUDA
        // Work queued on the buffer finishes first; a sandbox's mapping keeps the memory alive.
        cudaDeviceSynchronize();
        vmm_unmap(data_, mapped_bytes_);
        count_shared_device_bytes(-std::int64_t(mapped_bytes_));
#endif
        if (fd_ >= 0) ::close(fd_);
        return;
    }
    ::munmap(data_, nbytes_);
    if (fd_ >= 0) ::close(fd_);
}

at::Tensor SharedBuffer::view(at::IntArrayRef sizes, at::IntArrayRef strides,
                              at::ScalarType dtype) {
    if (storage_bytes(sizes, strides, dtype) > nbytes_)
        throw std::runtime_error("tensor layout does not fit its shared buffer");
    auto keep = shared_from_this();
    return at::from_blob(
        data_, sizes, strides, [keep](void*) {}, at::TensorOptions().dtype(dtype).device(device_));
}

std::shared_ptr<SharedBuffer> SharedBuffer::segment_of(const at::Tensor& tensor,
                                                       std::size_t& offset) {
#ifdef KBENCH_WITH_CUDA
    if (!tensor.is_cuda() || tensor.numel() == 0) return nullptr;
    auto address = reinterpret_cast<std::uintptr_t>(tensor.data_ptr());
    std::lock_guard<std::mutex> lock(segments_mutex);
    auto& all = segments();
    auto it = all.upper_bound(address);
    if (it == all.begin()) return nullptr;
    --it;
    std::size_t end = std::size_t(address - it->first) +
                      storage_bytes(tensor.sizes(), tensor.strides(), tensor.scalar_type());
    if (end > it->second.mapped) return nullptr;
    std::shared_ptr<SharedBuffer> buffer(new SharedBuffer());
    buffer->cuda_ = true;
    buffer->borrowed_ = true;
    buffer->data_ = reinterpret_cast<void*>(it->first);
    buffer->nbytes_ = buffer->mapped_bytes_ = it->second.mapped;
    buffer->fd_ = it->second.fd;
    buffer->device_ = tensor.device();
    offset = std::size_t(address - it->first);
    return buffer;
#else
    (void)tensor;
    (void)offset;
    return nullptr;
#endif
}

#ifdef KBENCH_WITH_CUDA
extern "C" void* kbench_vmm_malloc(ssize_t size, int device, cudaStream_t stream);
#endif

namespace {

// torch.cuda.memory.CUDAPluggableAllocator over this library's kbench_vmm_malloc and
// kbench_vmm_free, made once (and never destroyed: it outlives the interpreter's teardown).
py::object vmm_allocator() {
#ifdef KBENCH_WITH_CUDA
    static py::object* allocator = [] {
        Dl_info info{};
        if (!::dladdr(reinterpret_cast<void*>(&kbench_vmm_malloc), &info) || !info.dli_fname)
            throw std::runtime_error("cannot find the library holding kbench_vmm_malloc");
        py::object memory = python_module("torch.cuda.memory");
        return new py::object(memory.attr("CUDAPluggableAllocator")(
            std::string(info.dli_fname), "kbench_vmm_malloc", "kbench_vmm_free"));
    }();
    return *allocator;
#else
    throw std::runtime_error("request pools need a worker built with CUDA");
#endif
}

}  // namespace

RequestPool::RequestPool(bool empty_all) : empty_all_(empty_all) {
    pool_ = python_module("torch.cuda").attr("MemPool")(vmm_allocator().attr("allocator")());
}

RequestPool::~RequestPool() {
    // CallInputs declares its pool first, so its own tensors are gone by now; the pool's segments
    // go once no tensor holds a block of theirs, at the next emptying of the cache.
    context_ = py::object();
#ifdef KBENCH_WITH_CUDA
    if (!empty_all_) {
        // This pool's segments only: the rest of the cache (a sandbox's for its timed calls)
        // stays as it was.
        try {
            py::tuple id = pool_.attr("id");
            cudaDeviceSynchronize();
            c10::cuda::CUDACachingAllocator::emptyCache(
                {id[0].cast<unsigned long long>(), id[1].cast<unsigned long long>()});
        } catch (const std::exception&) {
        }
        pool_ = py::object();
        return;
    }
#endif
    pool_ = py::object();
    // A pool nobody uses any more keeps its segments in PyTorch's cache until the cache is
    // emptied: they go now, before the next request's are made.
    empty_device_cache();
}

void empty_device_cache() {
    try {
        python_module("torch.cuda").attr("empty_cache")();
    } catch (const py::error_already_set&) {
    }
}

void RequestPool::enter() {
    context_ = python_module("torch.cuda").attr("use_mem_pool")(pool_);
    context_.attr("__enter__")();
}

void RequestPool::exit() {
    if (!context_) return;
    context_.attr("__exit__")(py::none(), py::none(), py::none());
    context_ = py::object();
}

protocol::Buffer SharedBuffer::describe(std::int64_t fd_index) const {
    return {cuda_ ? "cuda_fd" : "memfd", fd_index, nbytes_};
}

MappedBuffer::MappedBuffer(const protocol::Buffer& buffer, int fd, const Device& device)
    : nbytes_(buffer.nbytes), device_(device.torch_device()) {
    if (fd < 0) throw std::runtime_error("a shared buffer came without its descriptor");
    if (buffer.kind == "cuda_fd") {
#ifdef KBENCH_WITH_CUDA
        CUmemAllocationProp prop = vmm_properties();
        mapped_bytes_ = vmm_size(nbytes_, prop);
        CUmemGenericAllocationHandle handle = 0;
        CUresult imported = drv().MemImportFromShareableHandle(
            &handle, reinterpret_cast<void*>(static_cast<std::uintptr_t>(fd)),
            CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
        ::close(fd);
        cu_check(imported, "cuMemImportFromShareableHandle");
        try {
            data_ = vmm_map(handle, mapped_bytes_, prop);
        } catch (...) {
            drv().MemRelease(handle);
            throw;
        }
        drv().MemRelease(handle);
        cuda_ = true;
        return;
#else
        ::close(fd);
        throw std::runtime_error("a CUDA buffer in a worker built without CUDA");
#endif
    }
    // Populated now, so that the candidate's first touch is not a page fault inside its call.
    void* data = ::mmap(nullptr, nbytes_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
    int err = errno;
    ::close(fd);
    if (data == MAP_FAILED)
        throw std::runtime_error("mmap of shared memory: " + std::string(std::strerror(err)));
    data_ = data;
}

MappedBuffer::~MappedBuffer() {
    if (!data_) return;
    if (cuda_) {
#ifdef KBENCH_WITH_CUDA
        cudaDeviceSynchronize();
        vmm_unmap(data_, mapped_bytes_);
#endif
        return;
    }
    ::munmap(data_, nbytes_);
}

void MappedBuffer::set_writable(bool writable) const {
    if (cuda_ || !data_) return;
    if (::mprotect(data_, nbytes_, writable ? PROT_READ | PROT_WRITE : PROT_READ) != 0)
        throw std::runtime_error("mprotect of a shared buffer: " +
                                 std::string(std::strerror(errno)));
}

at::Tensor MappedBuffer::view(const protocol::TensorRef& ref) const {
    at::ScalarType dtype = dtype_from_name(ref.dtype);
    if (ref.offset > nbytes_ ||
        storage_bytes(ref.sizes, ref.strides, dtype) > nbytes_ - ref.offset ||
        ref.offset % c10::elementSize(dtype) != 0)
        throw std::runtime_error("a tensor's layout does not fit its shared buffer");
    return at::from_blob(
        static_cast<char*>(data_) + ref.offset, ref.sizes, ref.strides, [](void*) {},
        at::TensorOptions().dtype(dtype).device(device_));
}

protocol::TensorRef tensor_ref(std::uint64_t slot, const at::Tensor& view, std::size_t offset) {
    return {slot, offset, to_vector(view.sizes()), to_vector(view.strides()),
            dtype_name(view.scalar_type())};
}

namespace {

// Plain loops for CPU tensors: kbench's own work between requests must not wake PyTorch's
// thread pool, whose spinning threads would take the cores the other process is waiting for.
bool plain_cpu(const at::Tensor& t) {
    return t.device().is_cpu() && t.is_contiguous();
}

template <typename Word>
void fill_words(void* data, std::size_t count, Word value) {
    std::fill_n(static_cast<Word*>(data), count, value);
}

}  // namespace

void poison(at::Tensor& tensor) {
    if (tensor.numel() == 0) return;
    if (plain_cpu(tensor)) {
        void* data = tensor.data_ptr();
        auto n = std::size_t(tensor.numel());
        switch (tensor.scalar_type()) {
            case at::kFloat:
                return fill_words<std::uint32_t>(data, n, 0x7fc00000u);
            case at::kDouble:
                return fill_words<std::uint64_t>(data, n, 0x7ff8000000000000ull);
            case at::kHalf:
                return fill_words<std::uint16_t>(data, n, 0x7e00u);
            case at::kBFloat16:
                return fill_words<std::uint16_t>(data, n, 0x7fc0u);
            default:
                break;
        }
    }
    if (at::isFloatingType(tensor.scalar_type()) || at::isComplexType(tensor.scalar_type())) {
        tensor.fill_(std::numeric_limits<double>::quiet_NaN());
    } else if (tensor.scalar_type() == at::kBool) {
        tensor.fill_(true);
    } else {
        tensor.fill_(0x5a);
    }
}

void plain_copy(at::Tensor& dst, const at::Tensor& src) {
    if (plain_cpu(dst) && plain_cpu(src) && dst.scalar_type() == src.scalar_type() &&
        dst.sizes() == src.sizes()) {
        std::memcpy(dst.data_ptr(), src.data_ptr(), src.nbytes());
        return;
    }
    dst.copy_(src);
}

void undispatched_copy(at::Tensor& dst, const at::Tensor& src) {
    if (dst.sizes() != src.sizes() || dst.scalar_type() != src.scalar_type() ||
        dst.device() != src.device())
        throw std::runtime_error("undispatched_copy: tensors differ in shape, dtype or device");
    if (plain_cpu(dst) && plain_cpu(src)) {
        std::memcpy(dst.data_ptr(), src.data_ptr(), src.nbytes());
        return;
    }
    // TensorIterator and the copy kernel's own stub: no operator is looked up.
    at::native::copy_ignoring_overlaps(dst, src);
}

void exact_copy(at::Tensor& dst, const at::Tensor& src) {
    auto integer = same_width_integer(src.scalar_type());
    if (!integer || dst.scalar_type() != src.scalar_type() || dst.sizes() != src.sizes() ||
        src.is_complex()) {
        dst.copy_(src);
        return;
    }
    at::Tensor out = dst.view(*integer);
    at::bitwise_or_out(out, src.view(*integer), at::Scalar(0));
}

std::int64_t digest(const at::Tensor& tensor) {
    if (tensor.numel() == 0) return 0;
    if (plain_cpu(tensor)) {
        const auto* bytes = static_cast<const unsigned char*>(tensor.data_ptr());
        std::size_t n = tensor.nbytes();
        std::uint64_t sum = 0, word = 0;
        std::size_t i = 0;
        for (; i + 8 <= n; i += 8) {
            std::memcpy(&word, bytes + i, 8);
            sum += word;
        }
        for (; i < n; ++i) sum += bytes[i];
        return std::int64_t(sum);
    }
    // Integer sums (modulo 2^64) are exact and do not depend on the order of the reduction; over
    // wide words, since this runs twice a request for every output.
    return at::sum(as_words(tensor), at::kLong).item<std::int64_t>();
}

at::Tensor as_words(const at::Tensor& tensor) {
    at::Tensor bytes = tensor.contiguous().reshape(-1).view(at::kByte);
    std::int64_t offset = bytes.storage_offset();
    auto address = reinterpret_cast<std::uintptr_t>(bytes.data_ptr());
    for (auto [size, type] : {std::pair{8, at::kLong}, {4, at::kInt}, {2, at::kShort}})
        if (bytes.numel() % size == 0 && offset % size == 0 && address % size == 0)
            return bytes.view(type);
    return bytes;
}

}  // namespace kbench::worker

#ifdef KBENCH_WITH_CUDA
// PyTorch's pluggable allocator for a request's private pool (RequestPool): every segment is
// device memory with a descriptor of its own, so that a tensor made in the pool can be handed to
// a sandbox where it lies.
extern "C" __attribute__((visibility("default"))) void* kbench_vmm_malloc(ssize_t size, int,
                                                                          cudaStream_t) {
    using namespace kbench::worker;
    int fd = -1;
    std::size_t mapped = 0;
    void* data = nullptr;
    try {
        data = vmm_create(std::size_t(std::max<ssize_t>(size, 1)), fd, mapped);
    } catch (const std::exception&) {
        return nullptr;  // PyTorch reports it as out of memory
    }
    // A sandbox maps the whole segment: nothing of what the memory held before (the judge's
    // own, freed) in the parts the request's tensors do not cover.
    if (cudaMemset(data, 0, mapped) != cudaSuccess) {
        vmm_unmap(data, mapped);
        ::close(fd);
        return nullptr;
    }
    std::lock_guard<std::mutex> lock(segments_mutex);
    segments()[reinterpret_cast<std::uintptr_t>(data)] = {fd, mapped};
    return data;
}

extern "C" __attribute__((visibility("default"))) void kbench_vmm_free(void* data, ssize_t, int,
                                                                       cudaStream_t) {
    using namespace kbench::worker;
    Segment segment;
    {
        std::lock_guard<std::mutex> lock(segments_mutex);
        auto it = segments().find(reinterpret_cast<std::uintptr_t>(data));
        if (it == segments().end()) return;
        segment = it->second;
        segments().erase(it);
    }
    cudaDeviceSynchronize();
    vmm_unmap(data, segment.mapped);
    ::close(segment.fd);
}
#endif
