#pragma once

// Between the judge (trusted) and a sandbox (the candidate's process). Everything the sandbox
// says is a claim: the judge checks what it can see for itself (the bytes it is handed, its own
// clock) and treats the rest as a description.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "protocol/message.hpp"

namespace kbench::protocol {

// Memory the judge owns and shares, named by a descriptor that rides on the message (fd_index in
// the message's descriptors): a memfd, or device memory exported by CUDA's virtual memory API.
struct Buffer {
    std::string kind;  // "memfd" or "cuda_fd"
    std::int64_t fd_index = -1;
    std::uint64_t nbytes = 0;

    json to_json() const;
    static Buffer from_json(const json& j);
};

// A buffer under the number that tensors name it by, for as long as the judge keeps it.
struct Slot {
    std::uint64_t id = 0;
    Buffer buffer;

    json to_json() const;
    static Slot from_json(const json& j);
};

// A tensor laid over a slot.
struct TensorRef {
    std::uint64_t slot = 0;
    std::uint64_t offset = 0;  // bytes from the slot's start
    std::vector<std::int64_t> sizes;
    std::vector<std::int64_t> strides;
    std::string dtype;  // "float32", ...

    json to_json() const;
    static TensorRef from_json(const json& j);
};

// One argument of a call: a tensor over a slot, or a plain value (numbers, strings, None and
// lists of them, as value_to_json writes them).
struct Argument {
    bool is_tensor = false;
    TensorRef tensor;
    json value;

    json to_json() const;
    static Argument from_json(const json& j);
};

// The sandbox's first message.
struct SandboxHello {
    std::int64_t pid = 0;

    json to_json() const;
    static SandboxHello from_json(const json& j);
};

// The device, and the size of the cache flush between calls of one request.
struct AttachSandbox {
    static constexpr Op kOp = Op::attach;
    DeviceKind device = DeviceKind::cpu;
    std::uint64_t flush_bytes = 0;
    double gpu_memory_fraction = 0;  // soft cap on the sandbox's GPU memory; 0: none
    Tf32 tf32 = Tf32::off;           // the precision policy, applied before anything is loaded

    json to_json() const;
    static AttachSandbox from_json(const json& j);
};

// Import the candidate and construct ModelNew(*init_args) under the seed.
struct LoadCandidate {
    static constexpr Op kOp = Op::load;
    std::string candidate_file;
    std::vector<Slot> slots;  // for tensor init arguments
    std::vector<Argument> init_args;
    std::uint64_t seed = 0;
    std::string precision;
    // Under KernelBench's mode: the reference's program, run in the candidate's module before
    // the candidate's own code, as KernelBench runs both in one namespace (empty otherwise).
    std::string reference_code;

    json to_json() const;
    static LoadCandidate from_json(const json& j);
};

struct CallSpec {
    std::vector<Argument> args;
    std::vector<TensorRef> outputs;  // where each output is to be copied

    json to_json() const;
    static CallSpec from_json(const json& j);
};

// One request: calls run back to back. A timed request records events around each call and
// flushes the cache between them (the judge flushed before the first). A null request runs the
// same path with the model call left out: it returns tensors shaped like the outputs, which is
// how the judge measures the protocol's own cost before any candidate code is loaded.
struct CallBatch {
    static constexpr Op kOp = Op::call;
    std::uint64_t nonce = 0;  // echoed by the reply: a reply sent before the request cannot have it
    std::vector<Slot> new_slots;
    std::vector<std::uint64_t> drop_slots;
    std::vector<CallSpec> calls;
    bool timed = false;
    bool poison = false;  // poison freed blocks of the output sizes before each call
    bool null_model = false;
    bool transient = false;  // new_slots are this request's: the sandbox drops them after its reply
    // The outputs stay where the call made them, in device memory with descriptors of its own
    // that the reply carries (OutputReport::exported), until the sandbox's next request: the
    // reference's own sandbox makes the reference's outputs for the judge so (a GPU only).
    bool export_outputs = false;
    // The candidate's kernels (names as the kernel records give them) whose launches run as an
    // empty kernel in these calls: whether its outputs depend on its own kernels (a GPU only;
    // one untimed call with poison).
    std::vector<std::string> knockout;

    json to_json() const;
    static CallBatch from_json(const json& j);
};

// What the sandbox says about one output.
struct OutputReport {
    bool is_tensor = false;
    bool plain = false;  // exactly torch.Tensor, not a subclass
    std::string type;
    std::vector<std::int64_t> shape;
    std::string dtype;
    std::string device;
    std::int64_t aliases_input = -1;  // the input whose memory it shares, or -1
    bool copied = false;
    bool in_kbench_buffer = false;  // over a shared buffer of kbench's that is not an input
    std::int64_t digest = 0;        // of the judge's buffer once copied into (on a CPU), else 0
    // With export_outputs: the memory that holds the output, contiguous, from offset on.
    std::optional<Buffer> exported;
    std::uint64_t exported_offset = 0;

    json to_json() const;
    static OutputReport from_json(const json& j);
};

struct CallResult {
    double event_us = 0;  // device events around the call (the host clock on a CPU)
    double host_us = 0;   // the sandbox's host clock across the call and a device-wide sync
    std::string kind;     // "tensor", "tuple", "list", or the Python type returned
    bool plain = false;   // the container itself is exactly tuple or list (or a plain tensor)
    std::vector<OutputReport> outputs;

    json to_json() const;
    static CallResult from_json(const json& j);
};

struct CallsDone {
    std::uint64_t nonce = 0;
    std::vector<CallResult> results;
    json precision;  // the sandbox's precision flags after the calls (a claim)
    // The most device memory the sandbox's PyTorch allocator has held (a claim, recorded in the
    // verdict, never decided on; 0 on a CPU).
    std::uint64_t peak_bytes = 0;
    // With knockout: the launches replaced and those whose replacement failed, or why none could
    // be ({"replaced", "failed", "why"}); null otherwise.
    json knockout;

    json to_json() const;
    static CallsDone from_json(const json& j);
};

// The kernels that ran in the sandbox since the last such request (CUPTI's records, a claim
// like everything a sandbox says).
struct ReportKernels {
    static constexpr Op kOp = Op::kernels;

    json to_json() const;
    static ReportKernels from_json(const json& j);
};

// Kernels of one name on one stream in one kind of window: "call" (a model call, from just
// before it to a device-wide synchronisation after it), "load" (the candidate's import and
// construction), "kbench" (the sandbox's own work: copies, poison, cache flushes) or "outside"
// (none of them: work the candidate left running, or started from a thread of its own).
struct KernelRow {
    std::string name;  // as CUPTI gives it (C++ names mangled)
    std::uint64_t stream = 0;
    std::string window;
    std::uint64_t count = 0;
    std::uint64_t total_ns = 0;

    json to_json() const;
    static KernelRow from_json(const json& j);
};

// On a GPU, CUPTI's kernel records; on a CPU, samples of the program counters of the sandbox's
// threads in model calls, one row per function (by symbol, else by library) with count the
// samples and total_ns the CPU time they stand for.
struct KernelsReported {
    bool collected = false;
    std::string why;  // when not collected
    std::vector<KernelRow> rows;
    std::uint64_t calls = 0;     // model calls since the last report
    std::uint64_t call_ns = 0;   // their windows' total length
    std::uint64_t dropped = 0;   // records CUPTI dropped; on a CPU, samples lost
    std::string source = "gpu";  // "gpu" (kernel records) or "cpu" (samples)

    // Why these records cannot be what happened in `calls` model calls that took `wall_us` on
    // the judge's clock ("" when they can): another number of calls, or call windows longer
    // than the clock allowed (5% and 1 ms of slack).
    std::string disagreement(std::uint64_t judged_calls, double judged_wall_us) const;

    json to_json() const;
    static KernelsReported from_json(const json& j);
};

}  // namespace kbench::protocol
