#include "worker/kernel_activity.hpp"

#include <algorithm>
#include <iterator>
#include <map>
#include <mutex>
#include <tuple>
#include <vector>

#ifdef KBENCH_WITH_CUPTI
#include <cupti_activity.h>
#include <dlfcn.h>

#include <cstdlib>
#include <cstring>
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

}  // namespace kbench::worker::kernel_activity
