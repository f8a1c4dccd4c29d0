#include "sandbox/kernel_activity.hpp"

#include <algorithm>
#include <iterator>
#include <map>
#include <mutex>
#include <tuple>
#include <vector>

#ifdef KBENCH_WITH_CUPTI
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <cupti_activity.h>
#include <cupti_callbacks.h>
#include <cupti_driver_cbid.h>
#include <cupti_runtime_cbid.h>
#include <dlfcn.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <set>
#endif

namespace kbench::worker::kernel_activity {
namespace {

struct Span {
    std::uint64_t begin = 0;
    std::uint64_t end = 0;
    Window window = Window::call;
};

struct Record {
    std::uint32_t name = 0;  // index into State::names
    std::uint32_t stream = 0;
    std::uint64_t start = 0;
    std::uint64_t end = 0;
};

// Records cap: a candidate that launches millions of tiny kernels is summarised from the first
// ones, and the report says how many were left out.
constexpr std::size_t kMaxRecords = 1u << 21;

struct State {
    std::mutex mutex;
    std::string why_not = "kernel records were not started";
    bool active = false;
    std::vector<Span> spans;
    std::vector<Record> records;
    std::vector<std::string> names;
    std::map<std::string, std::uint32_t, std::less<>> name_ids;
    std::uint64_t dropped = 0;

    std::uint32_t intern(const char* name) {
        std::string_view text = name ? name : "?";
        auto it = name_ids.find(text);
        if (it != name_ids.end()) return it->second;
        auto id = std::uint32_t(names.size());
        names.emplace_back(text);
        name_ids.emplace(std::string(text), id);
        return id;
    }
};

State& state() {
    static State* s = new State;  // never destroyed: CUPTI's thread may call in at exit
    return *s;
}

const char* window_name(Window w) {
    switch (w) {
        case Window::call:
            return "call";
        case Window::load:
            return "load";
        case Window::kbench:
            return "kbench";
    }
    return "outside";
}

#ifdef KBENCH_WITH_CUPTI
struct Cupti {
    CUptiResult (*enable)(CUpti_ActivityKind) = nullptr;
    CUptiResult (*register_callbacks)(CUpti_BuffersCallbackRequestFunc,
                                      CUpti_BuffersCallbackCompleteFunc) = nullptr;
    CUptiResult (*flush_all)(uint32_t) = nullptr;
    CUptiResult (*next_record)(uint8_t*, size_t, CUpti_Activity**) = nullptr;
    CUptiResult (*timestamp)(uint64_t*) = nullptr;
    CUptiResult (*dropped)(CUcontext, uint32_t, size_t*) = nullptr;
    CUptiResult (*version)(uint32_t*) = nullptr;
};

Cupti& cupti() {
    static Cupti c;
    return c;
}

constexpr std::size_t kBufferBytes = 8u << 20;

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
    *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
    *size = *buffer ? kBufferBytes : 0;
    *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext context, uint32_t stream, uint8_t* buffer, size_t,
                               size_t valid) {
    State& s = state();
    {
        std::lock_guard<std::mutex> guard(s.mutex);
        CUpti_Activity* record = nullptr;
        while (cupti().next_record(buffer, valid, &record) == CUPTI_SUCCESS) {
            if (record->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL &&
                record->kind != CUPTI_ACTIVITY_KIND_KERNEL)
                continue;
            // The fields read here (start, end, stream, name) open every kernel record version
            // CUDA 12 and 13 write, at the same places.
            const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
            if (s.records.size() >= kMaxRecords) {
                ++s.dropped;
                continue;
            }
            s.records.push_back({s.intern(k->name), k->streamId, k->start, k->end});
        }
        size_t lost = 0;
        if (cupti().dropped && cupti().dropped(context, stream, &lost) == CUPTI_SUCCESS)
            s.dropped += lost;
    }
    std::free(buffer);
}

// The CUPTI library: the one already in the process (PyTorch's profiler links it), else the
// one next to PyTorch's CUDA libraries, else the system's.
void* open_cupti(std::string& tried) {
    for (const char* name : {"libcupti.so.13", "libcupti.so.12", "libcupti.so"}) {
        if (void* h = ::dlopen(name, RTLD_NOW | RTLD_NOLOAD | RTLD_GLOBAL)) return h;
    }
    for (const char* name : {"libcupti.so.13", "libcupti.so.12", "libcupti.so"}) {
        if (void* h = ::dlopen(name, RTLD_NOW | RTLD_GLOBAL)) return h;
        const char* e = ::dlerror();
        tried += std::string(tried.empty() ? "" : "; ") + (e ? e : name);
    }
    return nullptr;
}

template <typename F>
bool bind(void* library, const char* symbol, F& slot) {
    slot = reinterpret_cast<F>(::dlsym(library, symbol));
    return slot != nullptr;
}

// The knockout's state: the names replaced, the empty kernel (a CUkernel for the runtime's
// launches, which take one, and its CUfunction in the current context for the driver's), the
// counts. Callbacks come from any thread that launches.
struct KnockoutState {
    std::mutex mutex;
    std::set<std::string, std::less<>> names;
    std::atomic<bool> on{false};
    std::atomic<std::uint64_t> replaced{0};
    std::atomic<std::uint64_t> failed{0};
    CUkernel empty_kernel = nullptr;
    CUfunction empty_function = nullptr;
    CUpti_SubscriberHandle subscriber = nullptr;
    CUptiResult (*subscribe)(CUpti_SubscriberHandle*, CUpti_CallbackFunc, void*) = nullptr;
    CUptiResult (*unsubscribe)(CUpti_SubscriberHandle) = nullptr;
    CUptiResult (*enable_callback)(uint32_t, CUpti_SubscriberHandle, CUpti_CallbackDomain,
                                   CUpti_CallbackId) = nullptr;

    bool replaces(const char* name) {
        if (!name) return false;
        std::lock_guard<std::mutex> guard(mutex);
        return names.count(std::string_view(name)) > 0;
    }
};

KnockoutState& knockout_state() {
    static KnockoutState* k = new KnockoutState;  // never destroyed, as state()
    return *k;
}

// A launch callback's parameters: the function's arguments, in order, as a struct (CUPTI's
// layout for every API function).
struct DriverLaunch {  // cuLaunchKernel
    CUfunction f;
    unsigned gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes;
    CUstream hStream;
    void** kernelParams;
    void** extra;
};
struct DriverCooperativeLaunch {  // cuLaunchCooperativeKernel
    CUfunction f;
    unsigned gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes;
    CUstream hStream;
    void** kernelParams;
};
struct DriverLaunchEx {  // cuLaunchKernelEx
    const CUlaunchConfig* config;
    CUfunction f;
    void** kernelParams;
    void** extra;
};
struct RuntimeLaunch {  // cudaLaunchKernel, cudaLaunchCooperativeKernel
    const void* func;
    dim3 gridDim;
    dim3 blockDim;
    void** args;
    size_t sharedMem;
    cudaStream_t stream;
};
// CUDA 13's own launch of a <<<>>> kernel (__cudaLaunchKernel): a kernel handle in place of a
// function's address, the rest as cudaLaunchKernel's.
struct RuntimeKernelLaunch {
    cudaKernel_t kernel;
    dim3 gridDim;
    dim3 blockDim;
    void** args;
    size_t sharedMem;
    cudaStream_t stream;
};
struct RuntimeLaunchEx {  // cudaLaunchKernelExC
    const cudaLaunchConfig_t* config;
    const void* func;
    void** args;
};

constexpr const char* kEmptyKernelPtx = R"(.version 7.0
.target sm_75
.address_size 64
.visible .entry kbench_knocked_out()
{
    ret;
}
)";

// One thread of an empty kernel, with no arguments and no shared memory, in place of the
// launch: what the callback rewrites in each launch's parameters.
template <typename Params>
void empty_grid(Params* p) {
    p->gridDimX = p->gridDimY = p->gridDimZ = 1;
    p->blockDimX = p->blockDimY = p->blockDimZ = 1;
    p->sharedMemBytes = 0;
}

template <typename Params>
void empty_dims(Params* p) {
    p->gridDim = dim3(1, 1, 1);
    p->blockDim = dim3(1, 1, 1);
    p->sharedMem = 0;
}

bool replace_driver_launch(CUpti_CallbackId id, void* params, KnockoutState& k) {
    thread_local CUlaunchConfig config;
    switch (id) {
        case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
        case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz: {
            auto* p = static_cast<DriverLaunch*>(params);
            p->f = k.empty_function;
            empty_grid(p);
            p->kernelParams = nullptr;
            p->extra = nullptr;
            return true;
        }
        case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel:
        case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz: {
            auto* p = static_cast<DriverCooperativeLaunch*>(params);
            p->f = k.empty_function;
            empty_grid(p);
            p->kernelParams = nullptr;
            return true;
        }
        case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
        case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz: {
            auto* p = static_cast<DriverLaunchEx*>(params);
            if (!p->config) return false;
            config = *p->config;
            empty_grid(&config);
            config.attrs = nullptr;
            config.numAttrs = 0;
            p->config = &config;
            p->f = k.empty_function;
            p->kernelParams = nullptr;
            p->extra = nullptr;
            return true;
        }
        default:
            return false;
    }
}

bool replace_runtime_launch(CUpti_CallbackId id, void* params, KnockoutState& k) {
    thread_local cudaLaunchConfig_t config;
    const void* kernel = reinterpret_cast<const void*>(k.empty_kernel);
    switch (id) {
        case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000:
        case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000:
        case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000:
        case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000: {
            auto* p = static_cast<RuntimeLaunch*>(params);
            p->func = kernel;
            empty_dims(p);
            return true;
        }
        case CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000:
        case CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000: {
            auto* p = static_cast<RuntimeKernelLaunch*>(params);
            p->kernel = reinterpret_cast<cudaKernel_t>(k.empty_kernel);
            empty_dims(p);
            return true;
        }
        case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060:
        case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060: {
            auto* p = static_cast<RuntimeLaunchEx*>(params);
            if (!p->config) return false;
            config = *p->config;
            config.gridDim = dim3(1, 1, 1);
            config.blockDim = dim3(1, 1, 1);
            config.dynamicSmemBytes = 0;
            config.attrs = nullptr;
            config.numAttrs = 0;
            p->config = &config;
            p->func = kernel;
            return true;
        }
        default:
            return false;
    }
}

void CUPTIAPI on_launch(void*, CUpti_CallbackDomain domain, CUpti_CallbackId id, const void* data) {
    KnockoutState& k = knockout_state();
    // A runtime launch calls the driver: each domain keeps whether it replaced its own.
    thread_local bool replaced[2] = {false, false};
    bool& mine = replaced[domain == CUPTI_CB_DOMAIN_DRIVER_API ? 0 : 1];
    const auto* cb = static_cast<const CUpti_CallbackData*>(data);
    if (cb->callbackSite == CUPTI_API_ENTER) {
        mine = false;
        if (!k.on.load() || !k.replaces(cb->symbolName)) return;
        void* params = const_cast<void*>(cb->functionParams);
        mine = domain == CUPTI_CB_DOMAIN_DRIVER_API ? replace_driver_launch(id, params, k)
                                                    : replace_runtime_launch(id, params, k);
        if (mine) ++k.replaced;
        return;
    }
    if (!mine) return;
    mine = false;
    int result = domain == CUPTI_CB_DOMAIN_DRIVER_API
                     ? int(*static_cast<CUresult*>(cb->functionReturnValue))
                     : int(*static_cast<cudaError_t*>(cb->functionReturnValue));
    if (result != 0) ++k.failed;
}

// The empty kernel, loaded once into the current context; "" or why not.
std::string load_empty_kernel(KnockoutState& k) {
    if (k.empty_function) return "";
    void* driver = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (!driver) return "the CUDA driver is not loaded";
    CUresult (*load)(CUlibrary*, const void*, CUjit_option*, void**, unsigned, CUlibraryOption*,
                     void**, unsigned) = nullptr;
    CUresult (*get_kernel)(CUkernel*, CUlibrary, const char*) = nullptr;
    CUresult (*get_function)(CUfunction*, CUkernel) = nullptr;
    if (!bind(driver, "cuLibraryLoadData", load) ||
        !bind(driver, "cuLibraryGetKernel", get_kernel) ||
        !bind(driver, "cuKernelGetFunction", get_function))
        return "the CUDA driver lacks its library API (CUDA 12 or later)";
    CUlibrary library = nullptr;
    CUresult r = load(&library, kEmptyKernelPtx, nullptr, nullptr, 0, nullptr, nullptr, 0);
    if (r == CUDA_SUCCESS) r = get_kernel(&k.empty_kernel, library, "kbench_knocked_out");
    if (r == CUDA_SUCCESS) r = get_function(&k.empty_function, k.empty_kernel);
    if (r != CUDA_SUCCESS) {
        k.empty_kernel = nullptr;
        k.empty_function = nullptr;
        return "the empty kernel could not be loaded (CUDA error " + std::to_string(int(r)) + ")";
    }
    return "";
}
#endif

}  // namespace

std::string start() {
    State& s = state();
#ifdef KBENCH_WITH_CUPTI
    std::string tried;
    void* library = open_cupti(tried);
    if (!library) {
        s.why_not = "CUPTI could not be loaded (" + tried + ")";
        return s.why_not;
    }
    Cupti& c = cupti();
    if (!bind(library, "cuptiActivityEnable", c.enable) ||
        !bind(library, "cuptiActivityRegisterCallbacks", c.register_callbacks) ||
        !bind(library, "cuptiActivityFlushAll", c.flush_all) ||
        !bind(library, "cuptiActivityGetNextRecord", c.next_record) ||
        !bind(library, "cuptiGetTimestamp", c.timestamp) ||
        !bind(library, "cuptiGetVersion", c.version)) {
        s.why_not = "the CUPTI library lacks the activity API";
        return s.why_not;
    }
    bind(library, "cuptiActivityGetNumDroppedRecords", c.dropped);
    uint32_t version = 0;
    c.version(&version);
    // Kernel records changed their layout for good at CUDA 12's CUPTI; older ones are not read.
    if (version < 18) {
        s.why_not = "CUPTI API version " + std::to_string(version) + " is too old";
        return s.why_not;
    }
    if (c.register_callbacks(buffer_requested, buffer_completed) != CUPTI_SUCCESS ||
        c.enable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != CUPTI_SUCCESS) {
        s.why_not = "CUPTI refused to record kernels (another profiler may hold it)";
        return s.why_not;
    }
    std::lock_guard<std::mutex> guard(s.mutex);
    s.active = true;
    s.why_not.clear();
    return "";
#else
    s.why_not = "kbench was built without CUPTI";
    return s.why_not;
#endif
}

std::uint64_t now() {
#ifdef KBENCH_WITH_CUPTI
    std::uint64_t t = 0;
    if (state().active && cupti().timestamp(&t) == CUPTI_SUCCESS) return t;
#endif
    return 0;
}

void mark(Window window, std::uint64_t begin, std::uint64_t end) {
    State& s = state();
    if (begin == 0 || end < begin) return;
    std::lock_guard<std::mutex> guard(s.mutex);
    if (s.active) s.spans.push_back({begin, end, window});
}

protocol::KernelsReported report() {
    State& s = state();
    protocol::KernelsReported out;
#ifdef KBENCH_WITH_CUPTI
    if (s.active) cupti().flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
#endif
    std::lock_guard<std::mutex> guard(s.mutex);
    out.collected = s.active;
    out.why = s.why_not;
    if (!s.active) return out;
    std::vector<Span> spans = std::move(s.spans);
    std::vector<Record> records = std::move(s.records);
    s.spans.clear();
    s.records.clear();
    out.dropped = s.dropped;
    s.dropped = 0;
    std::sort(spans.begin(), spans.end(),
              [](const Span& a, const Span& b) { return a.begin < b.begin; });
    for (const Span& span : spans)
        if (span.window == Window::call) {
            ++out.calls;
            out.call_ns += span.end - span.begin;
        }
    // Spans do not overlap: a record belongs to the last one that began at or before its start,
    // if that one had not ended by then.
    std::map<std::tuple<std::uint32_t, std::uint32_t, std::string>, protocol::KernelRow> rows;
    for (const Record& r : records) {
        const char* where = "outside";
        auto after =
            std::upper_bound(spans.begin(), spans.end(), r.start,
                             [](std::uint64_t t, const Span& span) { return t < span.begin; });
        if (after != spans.begin() && r.start <= std::prev(after)->end)
            where = window_name(std::prev(after)->window);
        auto& row = rows[{r.name, r.stream, where}];
        if (row.count == 0) {
            row.name = s.names[r.name];
            row.stream = r.stream;
            row.window = where;
        }
        ++row.count;
        row.total_ns += r.end > r.start ? r.end - r.start : 0;
    }
    for (auto& [key, row] : rows) out.rows.push_back(std::move(row));
    return out;
}

Knockout::Knockout(const std::vector<std::string>& names) {
#ifdef KBENCH_WITH_CUPTI
    KnockoutState& k = knockout_state();
    std::string tried;
    void* library = state().active ? open_cupti(tried) : nullptr;
    if (!library) {
        why_ = "kernel records are off in this sandbox: " + state().why_not;
        return;
    }
    if (!bind(library, "cuptiSubscribe", k.subscribe) ||
        !bind(library, "cuptiUnsubscribe", k.unsubscribe) ||
        !bind(library, "cuptiEnableCallback", k.enable_callback)) {
        why_ = "the CUPTI library lacks the callback API";
        return;
    }
    why_ = load_empty_kernel(k);
    if (!why_.empty()) return;
    if (k.subscribe(&k.subscriber, on_launch, nullptr) != CUPTI_SUCCESS) {
        k.subscriber = nullptr;
        why_ = "CUPTI's callbacks are taken (another subscriber holds them)";
        return;
    }
    const CUpti_CallbackId driver[] = {CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
                                       CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
                                       CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel,
                                       CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz,
                                       CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,
                                       CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz};
    const CUpti_CallbackId runtime[] = {
        CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
        CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000,
        CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000,
        CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000,
        CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000,
        CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000,
        CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060,
        CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060};
    for (CUpti_CallbackId id : driver)
        if (k.enable_callback(1, k.subscriber, CUPTI_CB_DOMAIN_DRIVER_API, id) != CUPTI_SUCCESS)
            why_ = "CUPTI refused a driver launch callback";
    for (CUpti_CallbackId id : runtime)
        if (k.enable_callback(1, k.subscriber, CUPTI_CB_DOMAIN_RUNTIME_API, id) != CUPTI_SUCCESS)
            why_ = "CUPTI refused a runtime launch callback";
    if (!why_.empty()) {
        k.unsubscribe(k.subscriber);
        k.subscriber = nullptr;
        return;
    }
    {
        std::lock_guard<std::mutex> guard(k.mutex);
        k.names = std::set<std::string, std::less<>>(names.begin(), names.end());
    }
    k.replaced = 0;
    k.failed = 0;
    k.on = true;
#else
    (void)names;
    why_ = "kbench was built without CUPTI";
#endif
}

nlohmann::json Knockout::finish() {
    std::uint64_t replaced = 0, failed = 0;
#ifdef KBENCH_WITH_CUPTI
    KnockoutState& k = knockout_state();
    if (!finished_ && why_.empty()) {
        k.on = false;
        if (k.subscriber) k.unsubscribe(k.subscriber);
        k.subscriber = nullptr;
        replaced = k.replaced;
        failed = k.failed;
    }
#endif
    finished_ = true;
    return {{"replaced", replaced}, {"failed", failed}, {"why", why_}};
}

Knockout::~Knockout() {
    if (!finished_) finish();
}

}  // namespace kbench::worker::kernel_activity
