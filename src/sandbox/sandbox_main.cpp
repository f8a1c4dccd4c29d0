#include "sandbox/sandbox_main.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include <c10/core/impl/LocalDispatchKeySet.h>

#include "core/files.hpp"
#include "core/settings.hpp"
#include "protocol/framing.hpp"
#include "protocol/judge_messages.hpp"
#include "protocol/sandbox_messages.hpp"
#include "protocol/zygote_messages.hpp"
#include "runtime/cuda_timing_device.hpp"
#include "runtime/device.hpp"
#include "runtime/python.hpp"
#include "runtime/python_program.hpp"
#include "runtime/shared_tensor.hpp"
#include "sandbox/cpu_activity.hpp"
#include "sandbox/kernel_activity.hpp"

namespace kbench::worker {
namespace {

using protocol::FaultError;
using protocol::FaultKind;
using protocol::Op;
using HostClock = std::chrono::steady_clock;

struct ByteRange {
    std::uintptr_t begin = 0;
    std::uintptr_t end = 0;
};

ByteRange range_of(const at::Tensor& t) {
    if (!t.defined() || t.numel() == 0) return {};
    auto begin = reinterpret_cast<std::uintptr_t>(t.data_ptr());
    return {begin, begin + storage_bytes(t.sizes(), t.strides(), t.scalar_type())};
}

bool overlaps(ByteRange a, ByteRange b) {
    return a.begin < a.end && b.begin < b.end && a.begin < b.end && b.begin < a.end;
}

// kbench's own tensor operations here run without Python dispatch: a mode the candidate pushed
// cannot see or change them.
struct NoPythonDispatch {
    c10::impl::ExcludeDispatchKeyGuard guard{
        c10::DispatchKeySet({c10::DispatchKey::Python, c10::DispatchKey::PythonTLSSnapshot})};
};

// The candidate's process: kbench's part of it loads the candidate and runs it on what the judge
// hands over. Nothing here is trusted by the judge: it checks the bytes and keeps the clock.
// Keeps Python's cyclic collector off while it lives, but for resume() .. pause() spans; where
// the program had turned it off itself, it stays off.
class CollectorPause {
  public:
    CollectorPause() : enabled_(PyGC_Disable() != 0) {}
    ~CollectorPause() { resume(); }
    CollectorPause(const CollectorPause&) = delete;
    CollectorPause& operator=(const CollectorPause&) = delete;

    void pause() { enabled_ = PyGC_Disable() != 0; }
    void resume() {
        if (enabled_) PyGC_Enable();
        enabled_ = false;
    }

  private:
    bool enabled_;
};

class Harness {
  public:
    // device_kind "cuda": CUDA starts now, so that a sandbox started ahead of its use (the
    // reference's own, while the candidate is checked) has done it by then.
    Harness(int fd, DeviceKind device_kind) : fd_(fd) {
        if (device_kind != DeviceKind::cuda) return;
        try {
            device_.emplace(Device::open(device_kind));
        } catch (const std::exception&) {
            device_.reset();  // attach opens it again, and says why it cannot
        }
    }

    int serve() {
        sandbox::send_message(fd_, protocol::SandboxHello{::getpid()}.to_json());
        while (auto message = sandbox::recv_message(fd_)) {
            json reply;
            try {
                Op op = protocol::op_of(message->body);
                if (op == Op::exit) return 0;
                reply = handle(op, message->body, message->fds);
            } catch (const ProtocolError& e) {
                reply = protocol::fault_json({FaultKind::harness, e.what(), ""});
            }
            for (int fd : message->fds)
                if (fd >= 0) ::close(fd);
            sandbox::send_message(fd_, reply, reply_fds_);
            reply_fds_.clear();
            held_tensors_.clear();
            held_objects_.clear();
            // A transient request's buffers go once it is answered: the judge's memory for one
            // request only.
            for (std::uint64_t id : request_slots_) slots_.erase(id);
            request_slots_.clear();
        }
        return 0;
    }

  private:
    json handle(Op op, const json& body, std::vector<int>& fds) {
        FaultKind fault = op == Op::load ? FaultKind::candidate_load : FaultKind::candidate_raised;
        try {
            c10::AutoGradMode no_grad(false);
            switch (op) {
                case Op::attach:
                    attach(protocol::AttachSandbox::from_json(body));
                    return protocol::reply_json(protocol::Empty{});
                case Op::load:
                    load(protocol::LoadCandidate::from_json(body), fds);
                    return protocol::reply_json(protocol::Empty{});
                case Op::call:
                    return protocol::reply_json(call(protocol::CallBatch::from_json(body), fds));
                case Op::kernels:
                    protocol::ReportKernels::from_json(body);
                    return protocol::reply_json(device().is_cuda() ? kernel_activity::report()
                                                                   : cpu_activity::report());
                default:
                    throw ProtocolError("a sandbox does not serve '" +
                                        std::string(protocol::to_string(op)) + "'");
            }
        } catch (const ProtocolError&) {
            throw;
        } catch (const py::error_already_set& e) {
            std::string text = describe_python_error(e);
            if (text.find("Error building extension") != std::string::npos)
                fault = FaultKind::candidate_build;
            return protocol::fault_json({fault, text, ""});
        } catch (const FaultError& e) {
            return protocol::fault_json(e.fault());
        } catch (const std::exception& e) {
            return protocol::fault_json({fault, e.what(), ""});
        }
    }

    void attach(const protocol::AttachSandbox& a) {
        if (!device_ || device_->is_cuda() != (a.device == DeviceKind::cuda))
            device_.emplace(Device::open(a.device));
        // Kernel records start before the candidate is imported (on a CPU: samples of where
        // its threads are in model calls).
        if (device_->is_cuda())
            kernel_activity::start();
        else
            cpu_activity::start();
        timer_ = make_timing_device(*device_, std::size_t(a.flush_bytes));
        // The same precision policy as the judge's, before any code of the candidate's runs.
        apply_precision_policy(a.tf32);
        if (device_->is_cuda() && a.gpu_memory_fraction > 0)
            python_module("torch").attr("cuda").attr("set_per_process_memory_fraction")(
                a.gpu_memory_fraction);
        attached_ = true;
    }

    Device& device() {
        if (!device_ || !attached_) throw ProtocolError("the sandbox has no device yet");
        return *device_;
    }

    void take_slots(const std::vector<protocol::Slot>& slots, std::vector<int>& fds) {
        for (const protocol::Slot& slot : slots) {
            auto index = std::size_t(slot.buffer.fd_index);
            if (slot.buffer.fd_index < 0 || index >= fds.size() || fds[index] < 0)
                throw ProtocolError("a shared buffer's descriptor is missing");
            int fd = fds[index];
            fds[index] = -1;
            slots_[slot.id] = std::make_unique<MappedBuffer>(slot.buffer, fd, device());
        }
    }

    at::Tensor view(const protocol::TensorRef& ref) {
        auto it = slots_.find(ref.slot);
        if (it == slots_.end()) throw ProtocolError("no shared buffer " + std::to_string(ref.slot));
        return it->second->view(ref);
    }

    py::tuple arguments(const std::vector<protocol::Argument>& args,
                        std::vector<at::Tensor>* tensors) {
        py::list out;
        for (const protocol::Argument& arg : args) {
            if (arg.is_tensor) {
                at::Tensor t = view(arg.tensor);
                out.append(py::reinterpret_steal<py::object>(THPVariable_Wrap(t)));
                if (tensors) tensors->push_back(t);
            } else {
                out.append(value_from_json(arg.value));
                if (tensors) tensors->emplace_back();
            }
        }
        return py::tuple(out);
    }

    void load(const protocol::LoadCandidate& l, std::vector<int>& fds) {
        take_slots(l.slots, fds);
        dtype_ = precision_dtype(l.precision);
        cpu_activity::own_folder(fs::path(l.candidate_file).parent_path().string());
        py::tuple init = arguments(l.init_args, nullptr);
        std::uint64_t began = kernel_activity::now();
        struct MarkLoad {
            std::uint64_t began;
            ~MarkLoad() {
                kernel_activity::mark(kernel_activity::Window::load, began, kernel_activity::now());
            }
        } mark_load{began};
        // Failures at import are "import" failures (KernelBench: not compiled); a build that
        // fails at import is a build failure.
        py::module_ candidate;
        try {
            candidate = import_candidate(l.candidate_file, l.reference_code);
        } catch (const py::error_already_set& e) {
            std::string text = describe_python_error(e);
            if (text.find("Error building extension") != std::string::npos)
                throw FaultError(FaultKind::candidate_build, text);
            throw FaultError(FaultKind::candidate_load, text, "", "import");
        }
        if (!py::hasattr(candidate, "ModelNew"))
            throw FaultError(FaultKind::candidate_load, "the candidate defines no ModelNew", "",
                             "import");
        model_ = construct_from_init(candidate.attr("ModelNew"), py::list(init), l.seed,
                                     device().torch_device(), dtype_);
        if (!PyCallable_Check(model_.ptr()))
            throw FaultError(FaultKind::candidate_load, "ModelNew(...) is not callable");
        device().synchronize();
    }

    // Freed blocks of the output sizes, filled with poison, so that an output the candidate
    // allocates but never writes shows up as NaN rather than as stale, plausible data.
    void poison_allocator(const std::vector<at::Tensor>& outputs) {
        NoPythonDispatch guard;
        std::vector<at::Tensor> blocks;
        for (const at::Tensor& out : outputs) {
            at::Tensor block = at::empty(out.sizes(), out.options());
            poison(block);
            blocks.push_back(block);
        }
        device().synchronize();
    }

    // A null call returns new tensors shaped like the outputs, as a model would (their making
    // is the call's; their copying and freeing are the protocol's, as for a real call).
    py::object null_result(const std::vector<at::Tensor>& outputs) {
        NoPythonDispatch guard;
        py::list items;
        for (const at::Tensor& out : outputs)
            items.append(py::reinterpret_steal<py::object>(THPVariable_Wrap(at::zeros_like(out))));
        if (items.size() == 1) return items[0];
        return py::tuple(items);
    }

    struct Outputs {
        FlatOutput flat;
        std::vector<bool> copied;     // an item's: copied into the judge's buffer for it
        std::vector<bool> in_kbench;  // an item's: over a shared buffer that is not an input
    };

    // The output buffers of a call's outputs (read-only on a CPU but for kbench's copy).
    std::vector<const MappedBuffer*> buffers_of(const std::vector<protocol::TensorRef>& refs) {
        std::vector<const MappedBuffer*> out;
        for (const auto& ref : refs)
            if (auto it = slots_.find(ref.slot); it != slots_.end())
                out.push_back(it->second.get());
        return out;
    }

    // The result's items, each tensor that fits copied into the judge's buffer for it. An item
    // over kbench's own shared memory (an output buffer, or any but this call's inputs) is
    // marked and not copied: a result made in the judge's buffer would make the copy free.
    Outputs take_outputs(const py::object& result, const std::vector<at::Tensor>& targets,
                         const protocol::CallSpec& spec) {
        NoPythonDispatch guard;
        Outputs out{flatten_output(result), {}, {}};
        const FlatOutput& flat = out.flat;
        std::vector<bool>& copied = out.copied;
        copied.assign(flat.items.size(), false);
        out.in_kbench.assign(flat.items.size(), false);
        std::set<std::uint64_t> input_slots;
        for (const auto& arg : spec.args)
            if (arg.is_tensor) input_slots.insert(arg.tensor.slot);
        std::vector<const MappedBuffer*> buffers = buffers_of(spec.outputs);
        for (std::size_t i = 0; i < flat.items.size(); ++i) {
            if (!is_tensor(flat.items[i])) continue;
            const at::Tensor& t = THPVariable_Unpack(flat.items[i].ptr());
            ByteRange at = range_of(t);
            for (const auto& [id, buffer] : slots_)
                if (!input_slots.count(id) && overlaps(at, {buffer->begin(), buffer->end()}))
                    out.in_kbench[i] = true;
            if (out.in_kbench[i] || i >= targets.size()) continue;
            if (targets[i].sizes() != t.sizes() || targets[i].scalar_type() != t.scalar_type() ||
                targets[i].device() != t.device())
                continue;
            at::Tensor target = targets[i];
            buffers[i]->set_writable(true);
            undispatched_copy(target, t);
            buffers[i]->set_writable(false);
            copied[i] = true;
        }
        return out;
    }

    // Describes each output, the copies made.
    static protocol::CallResult report(const Outputs& taken, const std::vector<at::Tensor>& inputs,
                                       const std::vector<at::Tensor>& targets) {
        NoPythonDispatch guard;
        const FlatOutput& flat = taken.flat;
        protocol::CallResult r;
        r.kind = flat.kind;
        r.plain = flat.plain;
        for (std::size_t i = 0; i < flat.items.size(); ++i) {
            const py::object& item = flat.items[i];
            protocol::OutputReport o;
            o.type = python_type_name(item);
            if (is_tensor(item)) {
                const at::Tensor& t = THPVariable_Unpack(item.ptr());
                o.is_tensor = true;
                o.plain = is_plain_tensor(item);
                o.shape = to_vector(t.sizes());
                o.dtype = dtype_name(t.scalar_type());
                o.device = t.device().str();
                for (std::size_t j = 0; j < inputs.size(); ++j)
                    if (overlaps(range_of(t), range_of(inputs[j])))
                        o.aliases_input = std::int64_t(j);
                o.in_kbench_buffer = taken.in_kbench[i];
                if (taken.copied[i]) {
                    o.copied = true;
                    // What the judge must read back: a change after this is work done after
                    // the call returned.
                    const at::Tensor& target = targets[i];
                    if (target.device().is_cpu() && target.is_contiguous())
                        o.digest = digest(target);
                }
            }
            r.outputs.push_back(o);
        }
        return r;
    }

    protocol::CallsDone call(const protocol::CallBatch& b, std::vector<int>& fds) {
        if (!model_ && !b.null_model) throw ProtocolError("no candidate loaded");
        // The last request's exported outputs go back to the pool now: one request's at a time.
        exported_.clear();
        for (std::uint64_t id : b.drop_slots) slots_.erase(id);
        take_slots(b.new_slots, fds);
        if (b.transient)
            for (const protocol::Slot& slot : b.new_slots) request_slots_.push_back(slot.id);
        Device& d = device();
        if (b.export_outputs) {
            if (!d.is_cuda() || b.timed || b.null_model)
                throw ProtocolError("outputs are exported only from untimed model calls on a GPU");
            // From the first such request on, every allocation of this sandbox (the
            // reference's: no candidate runs here) comes from one pool of memory with
            // descriptors: its outputs can be exported where they lie, and its timed calls use
            // the same warm cache, so that nothing is held twice.
            if (!export_pool_) {
                export_pool_ = std::make_unique<RequestPool>(false);
                export_pool_->enter_for_good();
            }
        }
        protocol::CallsDone done;
        done.nonce = b.nonce;
        // Nothing else tells the call apart from a correctness trial: its freed blocks are
        // poisoned as theirs are (the judge asks for it), so an output only the knocked-out
        // kernels would have written holds NaN or another input's values.
        std::optional<kernel_activity::Knockout> knockout;
        if (!b.knockout.empty()) {
            if (!d.is_cuda() || b.timed || b.null_model || b.calls.size() != 1 || !b.poison)
                throw ProtocolError("a knockout is one untimed, poisoned model call on a GPU");
            knockout.emplace(b.knockout);
        }
        struct Sampling {
            bool on;
            explicit Sampling(bool on) : on(on) {
                if (on) cpu_activity::sample(true);
            }
            ~Sampling() {
                if (on) cpu_activity::sample(false);
            }
        } sampling(!d.is_cuda() && !b.timed && !b.null_model);
        // Python's collector runs only inside model calls: one that the harness's own allocations
        // set off would run the candidate's gc callbacks outside the timed window, where the
        // request's inputs already exist.
        CollectorPause collector;
        for (std::size_t i = 0; i < b.calls.size(); ++i) {
            const protocol::CallSpec& spec = b.calls[i];
            std::vector<at::Tensor> inputs, targets;
            py::tuple args = arguments(spec.args, &inputs);
            for (const auto& ref : spec.outputs) targets.push_back(view(ref));
            // The judge's output buffers cannot be written while the candidate's code runs.
            for (const MappedBuffer* buffer : buffers_of(spec.outputs)) buffer->set_writable(false);
            std::uint64_t own = kernel_activity::now();
            if (b.poison) poison_allocator(targets);
            // The judge flushed the cache before the first call; between calls it is done here.
            if (b.timed && i > 0) timer_->flush_cache();
            d.synchronize();
            py::object result;
            collector.resume();
            std::uint64_t began = kernel_activity::now();
            kernel_activity::mark(kernel_activity::Window::kbench, own, began);
            auto host0 = HostClock::now();
            if (!d.is_cuda() && !b.null_model) cpu_activity::call_begin();
            timer_->start();
            if (b.null_model)
                result = null_result(targets);
            else
                result = model_(*args);
            // On a CPU the copy of the outputs into the judge's buffers is part of the call: its
            // reads are the first of the outputs' memory, where work the candidate hid behind
            // them (memory it protected and fills from its own fault handler, values made on
            // first touch) runs. Both sides of rounds and the null calls copy alike. A result
            // made in the judge's buffer, which would make that copy free, is refused
            // (take_outputs). On a GPU the outputs are device memory, and the call is the
            // stream's events around it.
            std::optional<Outputs> taken;
            if (!d.is_cuda()) taken = take_outputs(result, targets, spec);
            timer_->stop();
            if (!d.is_cuda() && !b.null_model) cpu_activity::call_end();
            d.synchronize();
            auto host1 = HostClock::now();
            std::uint64_t ended = kernel_activity::now();
            // A null call's work is kbench's own.
            kernel_activity::mark(
                b.null_model ? kernel_activity::Window::kbench : kernel_activity::Window::call,
                began, ended);
            collector.pause();
            double host_us = std::chrono::duration<double, std::micro>(host1 - host0).count();
            double event_us = timer_->has_stream_clock() ? timer_->stream_elapsed_us() : host_us;
            if (!taken) taken = take_outputs(result, targets, spec);
            protocol::CallResult r = report(*taken, inputs, targets);
            if (b.export_outputs) export_outputs(taken->flat, r);
            d.synchronize();
            kernel_activity::mark(kernel_activity::Window::kbench, ended + 1,
                                  kernel_activity::now());
            r.event_us = event_us;
            r.host_us = host_us;
            done.results.push_back(std::move(r));
            // Released only once the reply is sent: finalizers and weakref callbacks the candidate
            // hung on them would otherwise run here, after its clock, before the reply.
            held_objects_.push_back(std::move(result));
            held_objects_.push_back(std::move(args));
            for (at::Tensor& t : inputs) held_tensors_.push_back(std::move(t));
            for (at::Tensor& t : targets) held_tensors_.push_back(std::move(t));
        }
        d.synchronize();
        if (knockout) done.knockout = knockout->finish();
        done.precision = precision_state();
        // Read in C++: a Python function here would be the candidate's to replace, and run after
        // its timer stopped.
        if (d.is_cuda()) done.peak_bytes = allocator_peak_bytes();
        return done;
    }

    // Each tensor output where the call made it, if that is a segment of the export pool, else
    // a copy made there; its segment's descriptor rides on the reply.
    void export_outputs(const FlatOutput& flat, protocol::CallResult& r) {
        NoPythonDispatch guard;
        for (std::size_t i = 0; i < flat.items.size(); ++i) {
            if (!is_tensor(flat.items[i])) continue;
            at::Tensor t = THPVariable_Unpack(flat.items[i].ptr());
            if (!t.is_cuda() || t.numel() == 0) continue;
            std::size_t offset = 0;
            std::shared_ptr<SharedBuffer> segment =
                t.is_contiguous() ? SharedBuffer::segment_of(t, offset) : nullptr;
            if (!segment) {
                // An input, a parameter, a view across memory of others: a copy of its own.
                at::Tensor copy =
                    at::empty(t.sizes(), t.options().memory_format(at::MemoryFormat::Contiguous));
                undispatched_copy(copy, t);
                t = copy;
                segment = SharedBuffer::segment_of(t, offset);
                if (!segment) throw ProtocolError("an exported output is not in the export pool");
            }
            r.outputs[i].exported = segment->describe(std::int64_t(reply_fds_.size()));
            r.outputs[i].exported_offset = offset;
            reply_fds_.push_back(segment->fd());
            exported_.push_back(t);
        }
        device().synchronize();
    }

    int fd_;
    std::optional<Device> device_;
    bool attached_ = false;  // the judge attached it: device, timer and precision set
    std::unique_ptr<timing::TimingDevice> timer_;
    std::map<std::uint64_t, std::unique_ptr<MappedBuffer>> slots_;
    std::vector<std::uint64_t> request_slots_;  // dropped after the reply
    // export_outputs: the pool every allocation comes from once the first such request came, the
    // outputs exported until the next request, the descriptors of the reply being made (the
    // pool's: not to be closed).
    std::unique_ptr<RequestPool> export_pool_;
    std::vector<at::Tensor> exported_;
    std::vector<int> reply_fds_;
    at::ScalarType dtype_ = at::kFloat;
    py::object model_;
    std::vector<py::object> held_objects_;  // a request's results and arguments, until its reply
    std::vector<at::Tensor> held_tensors_;
};

}  // namespace

int sandbox_main(int fd, DeviceKind device_kind) {
    python_module("kbench_worker.extensions").attr("install")(setting_or("KBENCH_PREBUILT", ""));
    Harness harness(fd, device_kind);
    return harness.serve();
}

int builder_main(int fd) {
    // The kind of device the build is for (the builder itself never sees a GPU).
    std::string device = setting_or("KBENCH_BUILD_DEVICE", "");
    py::module_ extensions = python_module("kbench_worker.extensions");
    extensions.attr("install")("", device);
    sandbox::send_message(fd, protocol::BuilderHello{::getpid()}.to_json());
    auto message = sandbox::recv_message(fd);
    if (!message) return 0;
    protocol::Built reply;
    try {
        auto request = protocol::BuildRequest::from_json(message->body);
        import_candidate(request.candidate_file, request.preamble);
        reply.outcome = BuildOutcome::ok;
    } catch (const py::error_already_set& e) {
        if (e.matches(extensions.attr("CudaOnCpu"))) {
            // Its message is the whole story: no traceback.
            reply.outcome = BuildOutcome::compile_error;
            reply.log = py::str(e.value()).cast<std::string>();
            sandbox::send_message(fd, protocol::reply_json(reply));
            return 0;
        }
        reply.log = describe_python_error(e);
        bool compile = e.matches(PyExc_SyntaxError) ||
                       reply.log.find("Error building extension") != std::string::npos;
        reply.outcome = compile ? BuildOutcome::compile_error : BuildOutcome::import_error;
    } catch (const std::exception& e) {
        reply.outcome = BuildOutcome::import_error;
        reply.log = e.what();
    }
    sandbox::send_message(fd, protocol::reply_json(reply));
    return 0;
}

}  // namespace kbench::worker
