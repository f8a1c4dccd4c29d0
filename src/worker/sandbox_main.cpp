#include "worker/sandbox_main.hpp"

#include <unistd.h>

#include <memory>
#include <optional>

#include "sandbox/framing.hpp"
#include "worker/cuda_timing_device.hpp"
#include "worker/device.hpp"
#include "worker/python_program.hpp"
#include "worker/shared_tensor.hpp"
#include "worker/timing/measurement.hpp"

namespace kbench::worker {
namespace {

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

// One call's arguments and the judge's buffers for its outputs.
struct CallSet {
    py::tuple args;
    std::vector<at::Tensor> inputs;   // shared input views (undefined for plain values)
    std::vector<at::Tensor> outputs;  // shared output buffers
};

class Sandbox {
  public:
    Sandbox(int fd, std::string device_kind) : fd_(fd), device_kind_(std::move(device_kind)) {}

    int serve() {
        json hello = {{"ok", true}, {"role", "sandbox"}, {"pid", ::getpid()}};
        sandbox::serve_requests(fd_, hello, [this](const std::string& op, const json& request) {
            return handle(op, request);
        });
        return 0;
    }

  private:
    json handle(const std::string& op, const json& request) {
        const char* fault = op == "load" ? "load_error" : "runtime_error";
        try {
            c10::AutoGradMode no_grad(false);
            if (op == "load") return load(request);
            if (op == "run") return run(request);
            if (op == "time") return time(request);
            if (op == "report_last") return report_last(request);
            return {{"ok", false}, {"status", "infra_error"}, {"error", "unknown request " + op}};
        } catch (const py::error_already_set& e) {
            return {{"ok", false}, {"status", fault}, {"error", describe_python_error(e)}};
        } catch (const CandidateFault& e) {
            return {{"ok", false}, {"status", e.status()}, {"error", e.what()}};
        } catch (const std::exception& e) {
            return {{"ok", false}, {"status", fault}, {"error", e.what()}};
        }
    }

    json load(const json& request) {
        device_.emplace(Device::open(device_kind_));
        dtype_ = precision_dtype(request.value("precision", std::string("fp32")));
        reference_ = exec_module(request.at("reference_code").get<std::string>(),
                                 "kbench_reference", "<reference>");
        py::module_ candidate = import_candidate(request.at("candidate_file").get<std::string>());
        if (!py::hasattr(candidate, "ModelNew"))
            throw CandidateFault("load_error", "the candidate defines no ModelNew");
        model_ = construct_model(candidate.attr("ModelNew"), reference_.attr("get_init_inputs"),
                                 request.value("seed", std::uint64_t(42)), device_->torch_device(),
                                 dtype_);
        if (!py::hasattr(model_, "__call__"))
            throw CandidateFault("load_error", "ModelNew(...) is not callable");
        device_->synchronize();
        return {{"ok", true}};
    }

    CallSet open_set(const json& set) {
        CallSet s;
        py::list args;
        for (const json& input : set.at("inputs")) {
            if (input.contains("value")) {
                args.append(value_from_json(input.at("value")));
                s.inputs.emplace_back();
                continue;
            }
            at::Tensor t = open_shared_tensor(input, *device_);
            args.append(py::reinterpret_steal<py::object>(THPVariable_Wrap(t)));
            s.inputs.push_back(t);
        }
        for (const json& output : set.at("outputs"))
            s.outputs.push_back(open_shared_tensor(output, *device_));
        s.args = py::tuple(args);
        return s;
    }

    // Freed blocks of the output sizes, filled with poison, so that an output the candidate
    // allocates but never writes shows up as NaN rather than as stale, plausible data.
    void poison_allocator(const CallSet& set) {
        std::vector<at::Tensor> blocks;
        for (const at::Tensor& out : set.outputs) {
            at::Tensor block = at::empty(out.sizes(), out.options());
            poison(block);
            blocks.push_back(block);
        }
        device_->synchronize();
    }

    // Describes each output for the judge and copies those that match into its buffers.
    json report_and_copy(const py::object& result, const CallSet& set) {
        FlatOutput flat = flatten_output(result);
        json outputs = json::array();
        for (std::size_t i = 0; i < flat.items.size(); ++i) {
            const py::object& item = flat.items[i];
            json o = {{"is_tensor", false}, {"type", python_type_name(item)}, {"copied", false}};
            if (THPVariable_Check(item.ptr())) {
                const at::Tensor& t = THPVariable_Unpack(item.ptr());
                o["is_tensor"] = true;
                o["exact_type"] = THPVariable_CheckExact(item.ptr());
                o["shape"] = to_vector(t.sizes());
                o["dtype"] = dtype_name(t.scalar_type());
                o["device"] = t.device().str();
                o["aliases_input"] = -1;
                for (std::size_t j = 0; j < set.inputs.size(); ++j)
                    if (overlaps(range_of(t), range_of(set.inputs[j]))) o["aliases_input"] = j;
                if (i < set.outputs.size()) {
                    const at::Tensor& target = set.outputs[i];
                    if (target.sizes() == t.sizes() && target.scalar_type() == t.scalar_type() &&
                        target.device() == t.device()) {
                        at::Tensor(target).copy_(t);
                        o["copied"] = true;
                    }
                }
            }
            outputs.push_back(o);
        }
        device_->synchronize();
        return {{"kind", flat.kind}, {"outputs", outputs}};
    }

    json run(const json& request) {
        CallSet set = open_set(request);
        if (request.value("poison", true)) poison_allocator(set);
        seed_torch(request.value("seed", std::uint64_t(0)));
        py::object result = model_(*set.args);
        device_->synchronize();
        return {{"ok", true}, {"report", report_and_copy(result, set)}};
    }

    // A timed call's own seed: the run's secret base seed and the call's number, mixed
    // (splitmix64), kept below 2^63 for torch.manual_seed.
    static std::uint64_t call_seed(std::uint64_t base, std::size_t call) {
        std::uint64_t z = base + 0x9e3779b97f4a7c15ull * (call + 1);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        return (z ^ (z >> 31)) >> 1;
    }

    // kbench's protocol: every call, warm-up included, gets inputs no call has had before,
    // made by the reference's get_inputs() under the call's seed, outside the timed window. A
    // candidate that remembers outputs by input address or content therefore has nothing to
    // replay. The last call's inputs and output are kept for report_last.
    json time_on_fresh_inputs(const TimingConfig& config, std::uint64_t base) {
        auto timer = make_timing_device(*device_, 0);
        py::tuple args;
        std::uint64_t seed = 0;
        py::object last;
        auto prepare = [&](std::size_t i) {
            args = py::tuple();  // the previous call's inputs go before the next ones come
            last = py::none();
            seed = call_seed(base, i);
            args = py::tuple(
                make_inputs(reference_.attr("get_inputs"), seed, device_->torch_device(), dtype_));
            device_->synchronize();
        };
        auto call = [&](std::size_t) { last = model_(*args); };
        timing::Measurement m = timing::measure(*timer, call, config, prepare);
        device_->synchronize();
        last_args_ = args;
        last_output_ = last;
        return {{"ok", true}, {"measurement", m.to_json()}, {"last_seed", seed}};
    }

    // The last timed call for the judge: its output into the judge's buffers for the call's
    // seed, and its inputs over the judge's copies of them, so that the judge checks both the
    // output and that the inputs were what get_inputs() gives for that seed, left unchanged.
    json report_last(const json& request) {
        if (!last_output_) throw std::runtime_error("no timed call to report");
        CallSet judge_set = open_set(request);
        CallSet mine;
        mine.args = last_args_;
        mine.outputs = judge_set.outputs;
        for (std::size_t j = 0; j < last_args_.size(); ++j) {
            py::handle arg = last_args_[j];
            if (!THPVariable_Check(arg.ptr())) {
                mine.inputs.emplace_back();
                continue;
            }
            at::Tensor t = THPVariable_Unpack(arg.ptr());
            mine.inputs.push_back(t);
            if (j < judge_set.inputs.size() && judge_set.inputs[j].defined() &&
                judge_set.inputs[j].sizes() == t.sizes() &&
                judge_set.inputs[j].scalar_type() == t.scalar_type())
                judge_set.inputs[j].copy_(t);
        }
        json report = report_and_copy(*last_output_, mine);
        return {{"ok", true}, {"report", report}};
    }

    json time(const json& request) {
        if (request.contains("fresh_seed"))
            return time_on_fresh_inputs(TimingConfig::from_json(request.at("timing")),
                                        request.at("fresh_seed").get<std::uint64_t>());
        std::vector<CallSet> sets;
        for (const json& set : request.at("sets")) sets.push_back(open_set(set));
        if (sets.empty()) throw std::runtime_error("time needs at least one input set");
        TimingConfig config = TimingConfig::from_json(request.at("timing"));
        std::size_t flush =
            config.protocol == Mode::kernelbench ? std::size_t(config.kb_flush_bytes) : 0;
        auto timer = make_timing_device(*device_, flush);
        py::object last;
        std::size_t last_set = 0;
        auto call = [&](std::size_t i) {
            last_set = i % sets.size();
            last = model_(*sets[last_set].args);
        };
        timing::Measurement m = timing::measure(*timer, call, config);
        device_->synchronize();
        json report = report_and_copy(last, sets[last_set]);
        return {
            {"ok", true}, {"measurement", m.to_json()}, {"last_set", last_set}, {"report", report}};
    }

    int fd_;
    std::string device_kind_;
    std::optional<Device> device_;
    at::ScalarType dtype_ = at::kFloat;
    py::module_ reference_;
    py::object model_;
    py::tuple last_args_;
    std::optional<py::object> last_output_;
};

}  // namespace

int sandbox_main(int fd, const std::string& device_kind) {
    Sandbox sandbox(fd, device_kind);
    return sandbox.serve();
}

int builder_main(int fd) {
    sandbox::send_message(fd, {{"ok", true}, {"role", "builder"}, {"pid", ::getpid()}});
    auto message = sandbox::recv_message(fd);
    if (!message) return 0;
    json reply;
    try {
        import_candidate(message->body.at("candidate_file").get<std::string>());
        reply = {{"ok", true}};
    } catch (const py::error_already_set& e) {
        std::string text = describe_python_error(e);
        bool compile = e.matches(PyExc_SyntaxError) ||
                       text.find("Error building extension") != std::string::npos;
        reply = {
            {"ok", false}, {"status", compile ? "compile_error" : "import_error"}, {"error", text}};
    } catch (const std::exception& e) {
        reply = {{"ok", false}, {"status", "import_error"}, {"error", e.what()}};
    }
    sandbox::send_message(fd, reply);
    return 0;
}

}  // namespace kbench::worker
