#include "judge/reference_problem.hpp"

#include <algorithm>
#include <chrono>

#include "runtime/device.hpp"
#include "runtime/python.hpp"
#include "runtime/python_program.hpp"
#include "runtime/shared_tensor.hpp"

namespace kbench::worker {

CallInputs make_call_inputs(ReferenceProblem& p, std::uint64_t seed, const Device& device,
                            bool pooled) {
    CallInputs c;
    c.seed = seed;
    // Strict mode makes inputs on the device (its seeds are secret; see rules.py) unless that
    // holds large temporaries; kernelbench mode on the CPU, as the reference harness does.
    auto make = [&] {
        return make_inputs(p.module.attr("get_inputs"), seed, device.torch_device(), p.dtype,
                           p.strict && !p.inputs_on_host);
    };
    py::list values;
    if (pooled && device.is_cuda()) {
        c.pool = std::make_shared<RequestPool>();
        values = c.pool->within(make);
    } else {
        values = make();
    }
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

namespace {

bool is_out_of_memory(const py::error_already_set& e);

// The reference's call on inputs: on copies of them (copy), or on the judge's tensors as they
// are, with word sums before and after that tell whether it changed them.
ReferenceOutput call_reference(ReferenceProblem& p, const CallInputs& inputs, const Device& device,
                               bool copy) {
    model_to_device(p, device);
    ReferenceOutput r;
    py::list args;
    std::vector<std::int64_t> before(inputs.values.size(), 0);
    for (std::size_t j = 0; j < inputs.values.size(); ++j) {
        const at::Tensor& t = inputs.tensors[j];
        if (!t.defined()) {
            args.append(inputs.values[j]);
            continue;
        }
        if (!copy) before[j] = digest(t);
        args.append(py::reinterpret_steal<py::object>(THPVariable_Wrap(copy ? t.clone() : t)));
    }
    seed_torch(inputs.seed);
    device.synchronize();
    auto start = std::chrono::steady_clock::now();
    py::object result = p.model(*py::tuple(args));
    device.synchronize();
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (p.call_seconds == 0 || seconds < p.call_seconds) p.call_seconds = seconds;
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
            if (copy) {
                at::Tensor after = THPVariable_Unpack(py::handle(args[j]).ptr());
                modified = !bitwise_equal(after, inputs.tensors[j]);
            } else {
                modified = digest(inputs.tensors[j]) != before[j];
            }
        }
        r.modifies.push_back(modified);
    }
    return r;
}

bool any_of(const std::vector<bool>& flags) {
    return std::find(flags.begin(), flags.end(), true) != flags.end();
}

}  // namespace

void model_to_host(ReferenceProblem& p, const Device& device) {
    if (p.model_on_host || !device.is_cuda()) return;
    python_module("kbench_worker.memory").attr("move_model")(p.model, "cpu");
    p.model_on_host = true;
    python_module("torch").attr("cuda").attr("empty_cache")();
}

void model_to_device(ReferenceProblem& p, const Device& device) {
    if (!p.model_on_host) return;
    python_module("kbench_worker.memory").attr("move_model")(p.model, device.torch_device().str());
    p.model_on_host = false;
}

ReferenceOutput run_reference_on_copy(ReferenceProblem& p, const CallInputs& inputs,
                                      const Device& device) {
    return call_reference(p, inputs, device, true);
}

ReferenceOutput run_reference(ReferenceProblem& p, CallInputs& inputs, const Device& device) {
    bool known = p.modifies.size() == inputs.tensors.size();
    if (!known || any_of(p.modifies)) return call_reference(p, inputs, device, true);
    ReferenceOutput r = call_reference(p, inputs, device, false);
    if (any_of(r.modifies)) {
        // Changed after all: the inputs as they were, from their seed, and copies from now on.
        p.modifies = r.modifies;
        inputs = make_call_inputs(p, inputs.seed, device);
    }
    return r;
}

void trim_kept_calls(ReferenceProblem& p, const Device& device, std::size_t adding) {
    std::size_t kept = adding;
    for (const auto& [s, call] : p.public_calls) kept += call.first.bytes + call.second.bytes;
    if (kept <= device.reference_cache_bytes()) return;
    p.public_calls.clear();
    if (device.is_cuda()) python_module("torch").attr("cuda").attr("empty_cache")();
}

const std::pair<CallInputs, ReferenceOutput>& public_call(ReferenceProblem& p, std::uint64_t seed,
                                                          const Device& device) {
    if (auto it = p.public_calls.find(seed); it != p.public_calls.end()) return it->second;
    // Kept within the device's allowance for them (Device::reference_cache_bytes): older calls
    // go first.
    trim_kept_calls(p, device, p.trial_bytes);
    CallInputs inputs = make_call_inputs(p, seed, device);
    ReferenceOutput out = run_reference(p, inputs, device);
    return p.public_calls.emplace(seed, std::make_pair(std::move(inputs), std::move(out)))
        .first->second;
}

std::unique_ptr<ReferenceProblem> load_reference(const protocol::PrepareProblem& request,
                                                 const Device& device) {
    auto p = std::make_unique<ReferenceProblem>();
    p->name = request.name.empty() ? "reference" : request.name;
    p->code = request.code;
    p->precision = request.precision;
    p->dtype = precision_dtype(request.precision);
    p->seed = request.seed;
    p->trials = request.trials;
    p->strict = request.mode == "strict";
    p->spec = {request.atol, request.rtol, p->strict};
    p->tf32 = request.tf32;
    apply_precision_policy(p->tf32);
    p->module = exec_module(request.code, "kbench_reference", "<reference " + p->name + ">");
    for (const char* name : {"Model", "get_inputs", "get_init_inputs"})
        if (!py::hasattr(p->module, name))
            throw std::runtime_error(std::string("the reference program defines no ") + name);
    p->init_values = make_init_values(p->module.attr("get_init_inputs"), p->seed,
                                      device.torch_device(), p->dtype);
    p->model = construct_from_init(p->module.attr("Model"), p->init_values, p->seed,
                                   device.torch_device(), p->dtype);
    // Again, once the reference's own code has run (it may set flags of its own), and recorded:
    // the reference's outputs and the baseline are computed under these.
    apply_precision_policy(p->tf32);
    p->precision_state = precision_state();
    p->public_trial_seeds = trial_seeds(p->seed, p->trials);
    // The base seed's call tells the outputs' layout, the size of a call, what one call holds on
    // the device at its peak, and how long making inputs takes.
    ProblemMemory& m = p->memory;
    py::module_ memory = python_module("kbench_worker.memory");
    m.parameters = memory.attr("parameter_bytes")(p->model).cast<std::size_t>();
    auto start = std::chrono::steady_clock::now();
    CallInputs first;
    ReferenceOutput out;
    std::size_t held = 0;
    try {
        if (device.is_cuda()) memory.attr("reset_peak")();
        std::size_t before = device.is_cuda() ? memory.attr("allocated")().cast<std::size_t>() : 0;
        first = make_call_inputs(*p, p->seed, device);
        device.synchronize();
        p->inputs_seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        m.inputs = first.bytes;
        // What making them held beyond them (strict mode makes them on the device).
        std::size_t making = device.is_cuda() ? memory.attr("peak")().cast<std::size_t>() : 0;
        m.making = making > before + first.bytes ? making - before - first.bytes : 0;
        // Its temporaries, cached by PyTorch's allocator, go back to the device (the plan
        // decides where later calls' inputs are made: plan_memory).
        if (m.making > kMakingOnDevice) python_module("torch").attr("cuda").attr("empty_cache")();
        if (device.is_cuda()) memory.attr("reset_peak")();
        held = device.is_cuda() ? memory.attr("allocated")().cast<std::size_t>() : 0;
        // On the inputs themselves, not a copy (a copy of 8 GiB inputs kept level 1 problem 94
        // from fitting where the reference harness fits): a digest tells whether it changed
        // them, and then they are made again from their seed below.
        out = call_reference(*p, first, device, false);
    } catch (const std::exception& e) {
        if (dynamic_cast<const CudaError*>(&e)) throw;  // the device's, not the problem's
        std::string what = e.what();
        auto* python = dynamic_cast<const py::error_already_set*>(&e);
        bool oom =
            python ? is_out_of_memory(*python) : what.find("out of memory") != std::string::npos;
        if (!device.is_cuda() || !oom) throw;
        // More than what was left to it: a bound, not a measure.
        std::size_t limit = memory.attr("limit")().cast<std::size_t>();
        m.call_peak = (limit > held ? limit - held : 0) + 1;
        throw ProblemTooLarge(python ? describe_python_error(*python) : what, m);
    }
    for (const at::Tensor& t : out.outputs)
        p->outputs.push_back({to_vector(t.sizes()), t.scalar_type()});
    p->modifies = out.modifies;
    p->trial_bytes = first.bytes + out.bytes;
    m.outputs = out.bytes;
    // Beyond what was held before the call (the inputs with it).
    std::size_t peak = device.is_cuda() ? memory.attr("peak")().cast<std::size_t>() : 0;
    m.call_peak = std::max<std::uint64_t>(out.bytes, peak > held ? peak - held : 0);
    m.modifies_inputs =
        std::find(out.modifies.begin(), out.modifies.end(), true) != out.modifies.end();
    // The inputs as they were, where the call changed them; later calls run on copies.
    // (The changed ones go first: two sets at once would be the copy this call did without.)
    if (m.modifies_inputs) {
        first = CallInputs();
        first = make_call_inputs(*p, p->seed, device);
    }
    p->public_calls.emplace(p->seed, std::make_pair(std::move(first), std::move(out)));
    return p;
}

namespace {

bool is_out_of_memory(const py::error_already_set& e) {
    std::string what = e.what();
    return e.matches(python_module("torch").attr("OutOfMemoryError")) ||
           what.find("out of memory") != std::string::npos ||
           what.find("ALLOC_FAILED") != std::string::npos;
}

std::string last_line_of(std::string text) {
    while (!text.empty() && text.back() == '\n') text.pop_back();
    std::size_t start = text.rfind('\n');
    return text.substr(start == std::string::npos ? 0 : start + 1);
}

}  // namespace

std::string arbiter_name(const std::string& precision) {
    return precision == "fp32" ? "float64" : "float32 (TF32 off)";
}

std::vector<at::Tensor> run_arbiter(ReferenceProblem& p, const CallInputs& inputs,
                                    const Device& device) {
    py::module_ r = rules();
    py::object dtype = r.attr("arbiter_dtype")(p.precision);
    py::list values;
    for (std::size_t j = 0; j < inputs.values.size(); ++j)
        values.append(inputs.tensors[j].defined()
                          ? py::reinterpret_steal<py::object>(THPVariable_Wrap(inputs.tensors[j]))
                          : inputs.values[j]);
    auto attempt = [&](const std::string& where) {
        if (!p.arbiter || p.arbiter_device != where) {
            p.arbiter = py::none();
            p.arbiter = r.attr("arbiter_model")(p.model, dtype, where);
            p.arbiter_device = where;
        }
        py::list out = r.attr("run_arbiter")(p.arbiter, values, inputs.seed, dtype, where);
        std::vector<at::Tensor> tensors;
        for (py::handle item : out) tensors.push_back(THPVariable_Unpack(item.ptr()).detach());
        device.synchronize();
        return tensors;
    };
    // Where the plan has room for it beside every party's share; on the host otherwise (and
    // when the device refuses after all).
    std::string first = !device.is_cuda() || p.plan.arbiter_on_device()
                            ? device.torch_device().str()
                            : std::string("cpu");
    try {
        try {
            return attempt(p.arbiter_device.empty() ? first : p.arbiter_device);
        } catch (const py::error_already_set& e) {
            if (!device.is_cuda() || p.arbiter_device == "cpu" || !is_out_of_memory(e)) throw;
            p.arbiter = py::none();
            python_module("torch").attr("cuda").attr("empty_cache")();
            return attempt("cpu");
        }
    } catch (const py::error_already_set& e) {
        // Not kept for the next candidate: a failure for want of memory may not happen again.
        p.arbiter = py::none();
        p.arbiter_device.clear();
        throw std::runtime_error("the reference cannot run at the arbiter's precision: " +
                                 last_line_of(describe_python_error(e)));
    } catch (const CudaError&) {
        throw;  // the device's fault, not the reference's
    } catch (const std::exception& e) {
        p.arbiter = py::none();
        p.arbiter_device.clear();
        throw std::runtime_error("the reference cannot run at the arbiter's precision: " +
                                 last_line_of(e.what()));
    }
}

const json& reference_work(ReferenceProblem& p, const Device& device) {
    if (!p.work.is_null()) return p.work;
    {
        // Inputs of its own, made for the count and dropped after it: the judge holds one call's
        // inputs and one call, as its plan says, not a kept call besides.
        CallInputs inputs;
        py::list values;
        try {
            inputs = make_call_inputs(p, p.public_trial_seeds.at(0), device);
            for (const py::object& v : inputs.values) values.append(v);
            model_to_device(p, device);
            py::object counted =
                python_module("kbench_worker.floor").attr("count")(p.model, values);
            p.work = json::parse(python_module("json").attr("dumps")(counted).cast<std::string>());
        } catch (const py::error_already_set& e) {
            p.work = {{"flops", nullptr},
                      {"bytes", nullptr},
                      {"flop_error",
                       "the work could not be counted: " + last_line_of(describe_python_error(e))}};
        }
    }
    // The flop counter leaves the call's inputs and outputs in a reference cycle (a closure of
    // its module tracker's): only Python's collector frees them, and on a problem of 6 GiB
    // inputs, waiting for it to run by itself left 12 GiB of device memory a problem behind.
    python_module("gc").attr("collect")();
    device.synchronize();
    return p.work;
}

std::vector<py::tuple> baseline_inputs(ReferenceProblem& p, const Device& device,
                                       bool kernelbench) {
    std::vector<std::uint64_t> seeds;
    if (kernelbench) {
        seeds.push_back(p.seed);
    } else {
        std::size_t budget = device.memory_bytes() / 8;
        std::size_t fit =
            std::max<std::size_t>(1, budget / std::max<std::size_t>(p.trial_bytes, 1));
        for (std::size_t t = 0;
             t < p.public_trial_seeds.size() && t < std::min<std::size_t>(3, fit); ++t)
            seeds.push_back(p.public_trial_seeds[t]);
    }
    std::vector<py::tuple> sets;
    for (std::uint64_t seed : seeds) {
        // A kept call's inputs are copied (the calls may change them); others are made for the
        // baseline alone, without the reference's outputs (a kept call holds those too, which
        // a plan with the outputs on the host has no room for).
        auto kept = p.public_calls.find(seed);
        CallInputs made;
        if (kept == p.public_calls.end()) made = make_call_inputs(p, seed, device);
        const CallInputs& inputs = kept != p.public_calls.end() ? kept->second.first : made;
        py::list args;
        for (std::size_t j = 0; j < inputs.values.size(); ++j) {
            if (!inputs.tensors[j].defined()) {
                args.append(inputs.values[j]);
                continue;
            }
            at::Tensor t =
                kept != p.public_calls.end() ? inputs.tensors[j].clone() : inputs.tensors[j];
            args.append(py::reinterpret_steal<py::object>(THPVariable_Wrap(t)));
        }
        sets.emplace_back(args);
    }
    return sets;
}

}  // namespace kbench::worker
