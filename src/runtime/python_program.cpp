#include "runtime/python_program.hpp"

#include <cmath>

#include "core/fields.hpp"
#include "runtime/python.hpp"

namespace kbench::worker {
py::module_ exec_module(const std::string& code, const std::string& module_name,
                        const std::string& filename) {
    py::module_ types = python_module("types");
    py::module_ builtins = python_module("builtins");
    py::module_ module = types.attr("ModuleType")(module_name);
    module.attr("__file__") = filename;
    python_module("sys").attr("modules")[py::str(module_name)] = module;
    py::object compiled = builtins.attr("compile")(code, filename, "exec");
    builtins.attr("exec")(compiled, module.attr("__dict__"));
    return module;
}

py::module_ import_file(const std::string& path, const std::string& module_name,
                        const std::string& preamble) {
    py::module_ util = python_module("importlib.util");
    py::object spec = util.attr("spec_from_file_location")(module_name, path);
    py::module_ module = util.attr("module_from_spec")(spec);
    python_module("sys").attr("modules")[py::str(module_name)] = module;
    if (!preamble.empty()) {
        py::module_ builtins = python_module("builtins");
        builtins.attr("exec")(builtins.attr("compile")(preamble, "<reference>", "exec"),
                              module.attr("__dict__"));
    }
    spec.attr("loader").attr("exec_module")(module);
    return module;
}

py::module_ import_candidate(const std::string& path, const std::string& preamble) {
    return import_file(path, "kbench_candidate", preamble);
}

py::module_ rules() {
    return python_module("kbench_worker.rules");
}

void seed_torch(std::uint64_t seed) {
    rules().attr("set_seed")(seed);
}

std::vector<std::uint64_t> trial_seeds(std::uint64_t seed, int trials) {
    return rules().attr("trial_seeds")(seed, trials).cast<std::vector<std::uint64_t>>();
}

namespace {

py::object dtype_object(at::ScalarType dtype) {
    return python_module("torch").attr(dtype_name(dtype).c_str());
}

py::object device_object(const at::Device& device) {
    return python_module("torch").attr("device")(device.str());
}

}  // namespace

py::list make_inputs(py::handle get_inputs, std::uint64_t seed, const at::Device& device,
                     at::ScalarType float_dtype, bool on_device) {
    return rules().attr("make_inputs")(get_inputs, seed, device_object(device),
                                       dtype_object(float_dtype), on_device);
}

py::list make_init_values(py::handle get_init_inputs, std::uint64_t seed, const at::Device& device,
                          at::ScalarType float_dtype) {
    return rules().attr("make_init_inputs")(get_init_inputs, seed, device_object(device),
                                            dtype_object(float_dtype));
}

py::object construct_from_init(py::handle cls, const py::list& init_values, std::uint64_t seed,
                               const at::Device& device, at::ScalarType float_dtype) {
    return rules().attr("construct_model")(cls, init_values, seed, device_object(device),
                                           dtype_object(float_dtype));
}

void apply_precision_policy(Tf32 tf32) {
    rules().attr("apply_precision")(std::string(to_string(tf32)));
}

json precision_state() {
    at::Context& c = at::globalContext();
    // A getter can refuse (PyTorch checks that its legacy and new TF32 settings agree, and a
    // candidate can set one of each): the refusal is reported in place of the value.
    auto read = [](auto&& get) -> json {
        try {
            return get();
        } catch (const std::exception& e) {
            std::string what = e.what();
            return "unreadable: " + what.substr(0, what.find('\n'));
        }
    };
    auto matmul_precision = [&] {
        switch (c.float32MatmulPrecision()) {
            case at::Float32MatmulPrecision::HIGHEST:
                return "highest";
            case at::Float32MatmulPrecision::HIGH:
                return "high";
            case at::Float32MatmulPrecision::MEDIUM:
                return "medium";
        }
        return "?";
    };
    auto reduced = [](at::CuBLASReductionOption o) {
        return o == at::CuBLASReductionOption::AllowReducedPrecisionWithSplitK;
    };
    return {{"tf32_matmul", read([&] { return c.allowTF32CuBLAS(); })},
            {"tf32_conv", read([&] { return c.allowTF32CuDNN(at::Float32Op::CONV); })},
            {"tf32_rnn", read([&] { return c.allowTF32CuDNN(at::Float32Op::RNN); })},
            {"float32_matmul_precision", read([&] { return std::string(matmul_precision()); })},
            {"fp16_reduced_precision_reduction",
             read([&] { return reduced(c.allowFP16ReductionCuBLAS()); })},
            {"bf16_reduced_precision_reduction",
             read([&] { return reduced(c.allowBF16ReductionCuBLAS()); })},
            {"fp16_accumulation", read([&] { return c.allowFP16AccumulationCuBLAS(); })},
            {"onednn_float32", read([&] {
                 return at::precision2str(
                     c.float32Precision(at::Float32Backend::MKLDNN, at::Float32Op::MATMUL));
             })},
            {"cudnn_benchmark", read([&] { return c.benchmarkCuDNN(); })},
            {"cudnn_deterministic", read([&] { return c.deterministicCuDNN(); })}};
}

bool is_tensor(py::handle value) {
    return PyType_IsSubtype(Py_TYPE(value.ptr()),
                            reinterpret_cast<PyTypeObject*>(THPVariableClass));
}

bool is_plain_tensor(py::handle value) {
    return Py_TYPE(value.ptr()) == reinterpret_cast<PyTypeObject*>(THPVariableClass);
}

FlatOutput flatten_output(const py::object& result) {
    FlatOutput flat;
    PyObject* o = result.ptr();
    if (is_tensor(result)) {
        flat.kind = "tensor";
        flat.plain = is_plain_tensor(result);
        flat.items.push_back(result);
    } else if (PyTuple_CheckExact(o) || PyList_CheckExact(o)) {
        flat.kind = PyTuple_CheckExact(o) ? "tuple" : "list";
        flat.plain = true;
        Py_ssize_t n = PyTuple_CheckExact(o) ? PyTuple_GET_SIZE(o) : PyList_GET_SIZE(o);
        for (Py_ssize_t i = 0; i < n; ++i) {
            PyObject* item = PyTuple_CheckExact(o) ? PyTuple_GET_ITEM(o, i) : PyList_GET_ITEM(o, i);
            flat.items.push_back(py::reinterpret_borrow<py::object>(item));
        }
    } else {
        flat.kind = python_type_name(result);
    }
    return flat;
}

std::string python_type_name(py::handle value) {
    const char* name = Py_TYPE(value.ptr())->tp_name;
    std::string text = name ? name : "?";
    if (text == "Tensor") return "torch.Tensor";
    return text;
}

json value_to_json(py::handle value) {
    if (value.is_none()) return nullptr;
    PyObject* o = value.ptr();
    if (PyBool_Check(o)) return o == Py_True;
    if (PyLong_CheckExact(o)) return value.cast<std::int64_t>();
    if (PyFloat_CheckExact(o)) {
        double v = PyFloat_AS_DOUBLE(o);
        return std::isfinite(v) ? json(v) : json{{"float", real_json(v)}};
    }
    if (PyUnicode_CheckExact(o)) return value.cast<std::string>();
    if (PyList_CheckExact(o) || PyTuple_CheckExact(o)) {
        json items = json::array();
        for (py::handle item : value) items.push_back(value_to_json(item));
        return json{{"sequence", PyTuple_CheckExact(o) ? "tuple" : "list"}, {"items", items}};
    }
    throw std::runtime_error("get_inputs() returned a " + python_type_name(value) +
                             "; kbench passes tensors, numbers, strings, None and lists of them");
}

py::object value_from_json(const json& value) {
    if (value.is_null()) return py::none();
    if (value.is_boolean()) return py::bool_(value.get<bool>());
    if (value.is_number_integer()) return py::int_(value.get<std::int64_t>());
    if (value.is_number()) return py::float_(value.get<double>());
    if (value.is_string()) return py::str(value.get<std::string>());
    Fields f(value, "value");
    if (f.has("float")) return py::float_(f.real("float"));  // a non-finite float
    py::list items;
    for (const auto& item : f.array("items")) items.append(value_from_json(item));
    if (f.text("sequence") == "tuple") return py::tuple(items);
    return items;
}

at::ScalarType precision_dtype(const std::string& precision) {
    if (precision == "fp16") return at::kHalf;
    if (precision == "bf16") return at::kBFloat16;
    return at::kFloat;
}

}  // namespace kbench::worker
