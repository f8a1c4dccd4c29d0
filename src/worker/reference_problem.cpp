#include "worker/reference_problem.hpp"

#include <chrono>

#include "worker/python_program.hpp"

namespace kbench::worker {

CallInputs make_call_inputs(ReferenceProblem& p, std::uint64_t seed, const Device& device) {
    CallInputs c;
    c.seed = seed;
    py::list values =
        make_inputs(p.module.attr("get_inputs"), seed, device.torch_device(), p.dtype);
    for (py::handle v : values) {
        c.values.push_back(py::reinterpret_borrow<py::object>(v));
        if (is_tensor(v)) {
            at::Tensor t = THPVariable_Unpack(v.ptr());
            c.tensors.push_back(t);
            c.bytes += t.nbytes();
        } else {
            value_to_json(v);  // refuse what cannot travel to a sandbox, here and clearly
            c.tensors.emplace_back();
        }
    }
    return c;
}

ReferenceOutput run_reference(ReferenceProblem& p, const CallInputs& inputs, const Device& device) {
    ReferenceOutput r;
    py::list args;
    for (std::size_t j = 0; j < inputs.values.size(); ++j) {
        if (inputs.tensors[j].defined())
            args.append(
                py::reinterpret_steal<py::object>(THPVariable_Wrap(inputs.tensors[j].clone())));
        else
            args.append(inputs.values[j]);
    }
    seed_torch(inputs.seed);
    py::object result = p.model(*py::tuple(args));
    device.synchronize();
    FlatOutput flat = flatten_output(result);
    if (flat.kind != "tensor" && flat.kind != "tuple" && flat.kind != "list")
        throw std::runtime_error("the reference returns a " + flat.kind +
                                 "; kbench compares tensors and tuples of tensors");
    for (const auto& item : flat.items) {
        if (!is_tensor(item))
            throw std::runtime_error("the reference returns a " + python_type_name(item) +
                                     " among its outputs; kbench compares tensors");
        at::Tensor out = THPVariable_Unpack(item.ptr()).detach();
        r.outputs.push_back(out);
        r.bytes += out.nbytes();
    }
    for (std::size_t j = 0; j < inputs.tensors.size(); ++j) {
        bool modified = false;
        if (inputs.tensors[j].defined()) {
            at::Tensor after = THPVariable_Unpack(py::handle(args[j]).ptr());
            modified = !bitwise_equal(after, inputs.tensors[j]);
        }
        r.modifies.push_back(modified);
    }
    return r;
}

const std::pair<CallInputs, ReferenceOutput>& public_call(ReferenceProblem& p, std::uint64_t seed,
                                                          const Device& device) {
    if (auto it = p.public_calls.find(seed); it != p.public_calls.end()) return it->second;
    // Kept within a quarter of the device's memory: older calls go first.
    std::size_t kept = 0;
    for (const auto& [s, call] : p.public_calls) kept += call.first.bytes + call.second.bytes;
    if (kept + p.trial_bytes > device.memory_bytes() / 4) {
        p.public_calls.clear();
        if (device.is_cuda()) py::module_::import("torch").attr("cuda").attr("empty_cache")();
    }
    CallInputs inputs = make_call_inputs(p, seed, device);
    ReferenceOutput out = run_reference(p, inputs, device);
    return p.public_calls.emplace(seed, std::make_pair(std::move(inputs), std::move(out)))
        .first->second;
}

std::unique_ptr<ReferenceProblem> load_reference(const protocol::PrepareProblem& request,
                                                 const Device& device) {
    auto p = std::make_unique<ReferenceProblem>();
    p->name = request.name.empty() ? "reference" : request.name;
    p->precision = request.precision;
    p->dtype = precision_dtype(request.precision);
    p->seed = request.seed;
    p->trials = request.trials;
    p->strict = request.mode == "strict";
    p->spec = {request.atol, request.rtol, p->strict};
    p->module = exec_module(request.code, "kbench_reference", "<reference " + p->name + ">");
    for (const char* name : {"Model", "get_inputs", "get_init_inputs"})
        if (!py::hasattr(p->module, name))
            throw std::runtime_error(std::string("the reference program defines no ") + name);
    p->init_values = make_init_values(p->module.attr("get_init_inputs"), p->seed,
                                      device.torch_device(), p->dtype);
    p->model = construct_from_init(p->module.attr("Model"), p->init_values, p->seed,
                                   device.torch_device(), p->dtype);
    p->public_trial_seeds = trial_seeds(p->seed, p->trials);
    // The base seed's call tells the outputs' layout, the size of a call, and how long making
    // inputs takes.
    auto start = std::chrono::steady_clock::now();
    CallInputs first = make_call_inputs(*p, p->seed, device);
    device.synchronize();
    p->inputs_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    ReferenceOutput out = run_reference(*p, first, device);
    for (const at::Tensor& t : out.outputs)
        p->outputs.push_back({to_vector(t.sizes()), t.scalar_type()});
    p->trial_bytes = first.bytes + out.bytes;
    p->public_calls.emplace(p->seed, std::make_pair(std::move(first), std::move(out)));
    return p;
}

}  // namespace kbench::worker
