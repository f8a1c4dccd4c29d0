#include "worker/judge.hpp"

#include <chrono>
#include <map>
#include <memory>
#include <optional>

#include "sandbox/framing.hpp"
#include "worker/compare.hpp"
#include "worker/cuda_timing_device.hpp"
#include "worker/device.hpp"
#include "worker/python_program.hpp"
#include "worker/shared_tensor.hpp"
#include "worker/timing/measurement.hpp"

namespace kbench::worker {
namespace {

// One trial's inputs and the reference's answer to them.
struct Trial {
    std::uint64_t seed = 0;
    std::vector<py::object> values;   // pristine inputs, never handed to any model
    std::vector<at::Tensor> tensors;  // the tensor inputs among them (undefined for others)
    std::vector<at::Tensor> outputs;  // the reference outputs
    std::vector<bool> reference_modifies;
    std::size_t bytes = 0;
};

// Shared copies of one trial's inputs and poisoned buffers for the candidate's outputs.
struct Stage {
    int trial = 0;
    std::vector<at::Tensor> inputs;
    std::vector<at::Tensor> outputs;
};

struct Problem {
    std::string key;
    std::string name;
    py::module_ module;
    py::object model;
    at::ScalarType dtype = at::kFloat;
    std::uint64_t seed = 42;
    std::vector<std::uint64_t> seeds;
    CompareSpec spec;
    std::map<int, Trial> trials;
    std::map<std::string, json> baselines;
    bool inputs_deterministic = true;  // get_inputs() gives the same under the same seed
    double inputs_seconds = 0;         // what one get_inputs() call took
};

std::string trial_label(int trial) {
    return trial < 0 ? "timing input" : "trial " + std::to_string(trial);
}

class Judge {
  public:
    Judge(int fd, Device device) : fd_(fd), device_(std::move(device)) {}

    int serve() {
        sandbox::serve_requests(fd_, hello(), [this](const std::string& op, const json& request) {
            return handle(op, request);
        });
        return 0;
    }

  private:
    json hello() {
        py::module_ torch = py::module_::import("torch");
        py::module_ sys = py::module_::import("sys");
        py::object cuda_version = torch.attr("version").attr("cuda");
        return {{"role", "judge"},
                {"device", device_.describe()},
                {"torch", py::str(torch.attr("__version__")).cast<std::string>()},
                {"cuda", cuda_version.is_none() ? "" : cuda_version.cast<std::string>()},
                {"python", py::str(sys.attr("version")).cast<std::string>().substr(0, 16)}};
    }

    json handle(const std::string& op, const json& request) {
        try {
            c10::AutoGradMode no_grad(false);
            if (op == "prepare") return prepare(request);
            if (op == "stage") return stage(request);
            if (op == "compare") return compare(request);
            if (op == "drop_stages") return drop_stages();
            if (op == "baseline") return baseline(request);
            if (op == "health") return health();
            return {{"ok", false}, {"fault", "judge"}, {"error", "unknown request " + op}};
        } catch (const py::error_already_set& e) {
            return {{"ok", false}, {"fault", "reference"}, {"error", describe_python_error(e)}};
        } catch (const CudaError& e) {
            return {{"ok", false}, {"fault", "device"}, {"error", e.what()}};
        } catch (const std::exception& e) {
            return {{"ok", false}, {"fault", "judge"}, {"error", e.what()}};
        }
    }

    json prepare(const json& request) {
        const json& problem = request.at("problem");
        const json& config = request.at("config");
        std::string key = problem.at("sha256").get<std::string>() + "/" + config.dump();
        if (problem_ && problem_->key == key)
            return {{"ok", true},
                    {"cached", true},
                    {"inputs_deterministic", problem_->inputs_deterministic},
                    {"inputs_seconds", problem_->inputs_seconds}};
        stages_.clear();
        problem_.reset();
        release_memory();

        auto p = std::make_unique<Problem>();
        p->key = key;
        p->name = problem.value("name", std::string("reference"));
        p->dtype = precision_dtype(config.value("precision", std::string("fp32")));
        p->seed = config.value("seed", std::uint64_t(42));
        p->spec = {config.value("atol", 1e-4), config.value("rtol", 1e-4),
                   config.value("mode", std::string("strict")) == "strict"};
        p->module = exec_module(problem.at("code").get<std::string>(), "kbench_reference",
                                "<reference " + p->name + ">");
        for (const char* name : {"Model", "get_inputs", "get_init_inputs"})
            if (!py::hasattr(p->module, name))
                throw std::runtime_error(std::string("the reference program defines no ") + name);
        p->model = construct_model(p->module.attr("Model"), p->module.attr("get_init_inputs"),
                                   p->seed, device_.torch_device(), p->dtype);
        p->seeds = trial_seeds(p->seed, config.value("trials", 5));
        p->inputs_deterministic = inputs_repeat(*p);
        device_.synchronize();
        problem_ = std::move(p);
        return {{"ok", true},
                {"cached", false},
                {"inputs_deterministic", problem_->inputs_deterministic},
                {"inputs_seconds", problem_->inputs_seconds}};
    }

    // Whether get_inputs() under one seed gives bitwise the same values twice: timed calls can
    // then have inputs of their own that the judge regenerates from the seed alone.
    bool inputs_repeat(Problem& p) {
        auto generate = [&] {
            return make_inputs(p.module.attr("get_inputs"), p.seed, device_.torch_device(),
                               p.dtype);
        };
        auto start = std::chrono::steady_clock::now();
        py::list a = generate();
        device_.synchronize();
        p.inputs_seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        py::list b = generate();
        if (a.size() != b.size()) return false;
        for (std::size_t j = 0; j < a.size(); ++j) {
            bool ta = THPVariable_Check(a[j].ptr()), tb = THPVariable_Check(b[j].ptr());
            if (ta != tb) return false;
            if (!ta) {
                if (!a[j].equal(b[j])) return false;
                continue;
            }
            if (!bitwise_equal(THPVariable_Unpack(a[j].ptr()), THPVariable_Unpack(b[j].ptr())))
                return false;
        }
        return true;
    }

    Problem& problem() {
        if (!problem_) throw std::runtime_error("no problem prepared");
        return *problem_;
    }

    // Trial index: -1 the base seed's inputs, 0.. the correctness trials; with an explicit seed
    // (the inputs of a timed call), any index the caller reserves for such trials.
    Trial& trial(int index, std::optional<std::uint64_t> seed = std::nullopt) {
        Problem& p = problem();
        if (auto it = p.trials.find(index); it != p.trials.end()) {
            if (!seed || it->second.seed == *seed) return it->second;
            p.trials.erase(it);
        }
        trim_trial_cache();
        Trial t = compute_trial(index, seed);
        return p.trials.emplace(index, std::move(t)).first->second;
    }

    Trial compute_trial(int index, std::optional<std::uint64_t> seed) {
        Problem& p = problem();
        if (!seed && index >= int(p.seeds.size())) throw std::runtime_error("no such trial");
        Trial t;
        t.seed = seed ? *seed : index < 0 ? p.seed : p.seeds[std::size_t(index)];
        py::list values =
            make_inputs(p.module.attr("get_inputs"), t.seed, device_.torch_device(), p.dtype);
        py::list call_args;
        for (py::handle v : values) {
            t.values.push_back(py::reinterpret_borrow<py::object>(v));
            if (THPVariable_Check(v.ptr())) {
                at::Tensor tensor = THPVariable_Unpack(v.ptr());
                t.tensors.push_back(tensor);
                t.bytes += tensor.nbytes();
                call_args.append(
                    py::reinterpret_steal<py::object>(THPVariable_Wrap(tensor.clone())));
            } else {
                value_to_json(v);  // refuse what cannot travel to a sandbox, here and clearly
                t.tensors.emplace_back();
                call_args.append(v);
            }
        }
        seed_torch(t.seed);
        py::object result = p.model(*py::tuple(call_args));
        device_.synchronize();
        FlatOutput flat = flatten_output(result);
        if (flat.kind != "tensor" && flat.kind != "tuple" && flat.kind != "list")
            throw std::runtime_error("the reference returns a " + flat.kind +
                                     "; kbench compares tensors and tuples of tensors");
        for (const auto& item : flat.items) {
            if (!THPVariable_Check(item.ptr()))
                throw std::runtime_error("the reference returns a " + python_type_name(item) +
                                         " among its outputs; kbench compares tensors");
            at::Tensor out = THPVariable_Unpack(item.ptr()).detach();
            t.outputs.push_back(out);
            t.bytes += out.nbytes();
        }
        for (std::size_t j = 0; j < t.tensors.size(); ++j) {
            bool modified = false;
            if (t.tensors[j].defined()) {
                at::Tensor after = THPVariable_Unpack(call_args[j].ptr());
                modified = !bitwise_equal(after, t.tensors[j]);
            }
            t.reference_modifies.push_back(modified);
        }
        return t;
    }

    // Keeps cached trials within a quarter of the device's memory.
    void trim_trial_cache() {
        Problem& p = problem();
        std::size_t cached = 0;
        for (const auto& [index, t] : p.trials) cached += t.bytes;
        std::size_t typical = p.trials.empty() ? 0 : p.trials.begin()->second.bytes;
        if (cached + typical <= device_.memory_bytes() / 4) return;
        std::erase_if(p.trials, [&](const auto& entry) {
            for (const auto& [id, s] : stages_)
                if (s.trial == entry.first) return false;
            return true;
        });
        release_memory();
    }

    json stage(const json& request) {
        int index = request.at("trial").get<int>();
        std::optional<std::uint64_t> seed;
        if (request.contains("seed")) seed = request.at("seed").get<std::uint64_t>();
        Trial& t = trial(index, seed);
        Stage s;
        s.trial = index;
        json inputs = json::array(), outputs = json::array();
        for (std::size_t j = 0; j < t.values.size(); ++j) {
            if (!t.tensors[j].defined()) {
                s.inputs.emplace_back();
                inputs.push_back({{"value", value_to_json(t.values[j])}});
                continue;
            }
            const at::Tensor& source = t.tensors[j];
            at::Tensor layout =
                source.is_non_overlapping_and_dense() ? source : source.contiguous();
            auto buffer = SharedBuffer::allocate(
                storage_bytes(layout.sizes(), layout.strides(), layout.scalar_type()), device_);
            at::Tensor view = buffer->view(layout.sizes(), layout.strides(), layout.scalar_type());
            view.copy_(source);
            inputs.push_back(buffer->descriptor(view));
            s.inputs.push_back(view);
        }
        for (const at::Tensor& ref : t.outputs) {
            auto buffer = SharedBuffer::allocate(ref.numel() * ref.element_size(), device_);
            at::Tensor view =
                buffer->view(ref.sizes(), row_major_strides(ref.sizes()), ref.scalar_type());
            poison(view);
            outputs.push_back(buffer->descriptor(view));
            s.outputs.push_back(view);
        }
        device_.synchronize();
        int id = next_stage_++;
        stages_.emplace(id, std::move(s));
        return {{"ok", true},       {"stage", id},        {"seed", t.seed},
                {"inputs", inputs}, {"outputs", outputs}, {"bytes", t.bytes}};
    }

    json compare(const json& request) {
        int id = request.at("stage").get<int>();
        auto it = stages_.find(id);
        if (it == stages_.end()) throw std::runtime_error("no such stage");
        Stage& s = it->second;
        Trial& t = trial(s.trial);
        std::string where = request.value("where", trial_label(s.trial));
        device_.synchronize();
        CompareResult r =
            compare_outputs(t.outputs, s.outputs, request.at("report"), problem().spec, where);
        if (r.ok && problem().spec.strict && request.value("check_inputs", true)) {
            if (auto failure =
                    check_inputs_unchanged(t.tensors, s.inputs, t.reference_modifies, where)) {
                r.ok = false;
                r.reason = *failure;
            }
        }
        stages_.erase(it);
        return {{"ok", true},
                {"passed", r.ok},
                {"reason", r.reason},
                {"max_abs_diff", r.max_abs_diff},
                {"max_rel_diff", r.max_rel_diff}};
    }

    json drop_stages() {
        stages_.clear();
        release_memory();
        return {{"ok", true}};
    }

    json baseline(const json& request) {
        Problem& p = problem();
        std::string key = request.dump();
        if (auto it = p.baselines.find(key); it != p.baselines.end()) return it->second;
        TimingConfig config = TimingConfig::from_json(request.at("timing"));
        std::vector<py::tuple> sets;
        for (int index : request.at("trials").get<std::vector<int>>()) {
            py::list args;
            for (const py::object& v : trial(index).values) {
                if (THPVariable_Check(v.ptr()))
                    args.append(py::reinterpret_steal<py::object>(
                        THPVariable_Wrap(THPVariable_Unpack(v.ptr()).clone())));
                else
                    args.append(v);
            }
            sets.emplace_back(args);
        }
        std::size_t flush =
            config.protocol == Mode::kernelbench ? std::size_t(config.kb_flush_bytes) : 0;
        auto timer = make_timing_device(device_, flush);
        py::object model = p.model;
        auto call = [&](std::size_t i) { model(*sets[i % sets.size()]); };
        timing::Measurement m = timing::measure(*timer, call, config);
        json reply = {{"ok", true}, {"measurement", m.to_json()}};
        p.baselines.emplace(key, reply);
        return reply;
    }

    json health() {
        try {
            device_.check_health();
            return {{"ok", true}, {"healthy", true}};
        } catch (const std::exception& e) {
            return {{"ok", true}, {"healthy", false}, {"error", e.what()}};
        }
    }

    void release_memory() {
        if (!device_.is_cuda()) return;
        py::module_::import("torch").attr("cuda").attr("empty_cache")();
    }

    int fd_;
    Device device_;
    std::unique_ptr<Problem> problem_;
    std::map<int, Stage> stages_;
    int next_stage_ = 0;
};

}  // namespace

int judge_main(int fd, const std::string& device_kind) {
    Device device = Device::open(device_kind);
    if (device.is_cuda()) py::module_::import("torch").attr("cuda").attr("set_device")(0);
    Judge judge(fd, std::move(device));
    return judge.serve();
}

}  // namespace kbench::worker
