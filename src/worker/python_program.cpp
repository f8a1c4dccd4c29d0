#include "worker/python_program.hpp"

#include <cmath>

#include "core/fields.hpp"

namespace kbench::worker {
namespace {

// Enters `with torch.device(name):` for the lifetime of the guard.
class DefaultDeviceGuard {
  public:
    explicit DefaultDeviceGuard(const std::string& name) {
        context_ = py::module_::import("torch").attr("device")(name);
        context_.attr("__enter__")();
    }
    ~DefaultDeviceGuard() {
        try {
            py::none none;
            context_.attr("__exit__")(none, none, none);
        } catch (...) {
        }
    }

  private:
    py::object context_;
};

}  // namespace

py::module_ exec_module(const std::string& code, const std::string& module_name,
                        const std::string& filename) {
    py::module_ types = py::module_::import("types");
    py::module_ builtins = py::module_::import("builtins");
    py::module_ module = types.attr("ModuleType")(module_name);
    module.attr("__file__") = filename;
    py::module_::import("sys").attr("modules")[py::str(module_name)] = module;
    py::object compiled = builtins.attr("compile")(code, filename, "exec");
    builtins.attr("exec")(compiled, module.attr("__dict__"));
    return module;
}

py::module_ import_file(const std::string& path, const std::string& module_name) {
    py::module_ util = py::module_::import("importlib.util");
    py::object spec = util.attr("spec_from_file_location")(module_name, path);
    py::module_ module = util.attr("module_from_spec")(spec);
    py::module_::import("sys").attr("modules")[py::str(module_name)] = module;
    spec.attr("loader").attr("exec_module")(module);
    return module;
}

py::module_ import_candidate(const std::string& path) {
    return import_file(path, "kbench_candidate");
}

void seed_torch(std::uint64_t seed) {
    py::module_::import("torch").attr("manual_seed")(seed);
}

std::vector<std::uint64_t> trial_seeds(std::uint64_t seed, int trials) {
    py::module_ torch = py::module_::import("torch");
    seed_torch(seed);
    std::vector<std::uint64_t> seeds;
    for (int i = 0; i < trials; ++i) {
        py::object drawn = torch.attr("randint")(0, (1ULL << 32) - 1, py::make_tuple(1));
        seeds.push_back(drawn.attr("item")().cast<std::uint64_t>());
    }
    return seeds;
}

py::object call_on_device(py::handle fn, const std::string& device, const py::tuple& args) {
    DefaultDeviceGuard guard(device);
    return fn(*args);
}

py::list prepare_values(py::handle values, const at::Device& device, at::ScalarType float_dtype) {
    py::list out;
    for (py::handle value : values) {
        if (THPVariable_Check(value.ptr())) {
            at::Tensor t = THPVariable_Unpack(value.ptr());
            if (at::isFloatingType(t.scalar_type())) t = t.to(float_dtype);
            out.append(py::reinterpret_steal<py::object>(THPVariable_Wrap(t.to(device))));
        } else {
            out.append(value);
        }
    }
    return out;
}

py::list make_inputs(py::handle get_inputs, std::uint64_t seed, const at::Device& device,
                     at::ScalarType float_dtype) {
    seed_torch(seed);
    py::object raw = call_on_device(get_inputs, device.str(), py::tuple());
    return prepare_values(raw, device, float_dtype);
}

py::list make_init_values(py::handle get_init_inputs, std::uint64_t seed, const at::Device& device,
                          at::ScalarType float_dtype) {
    seed_torch(seed);
    py::object init = call_on_device(get_init_inputs, device.str(), py::tuple());
    return prepare_values(init, device, float_dtype);
}

py::object construct_model(py::handle cls, py::handle get_init_inputs, std::uint64_t seed,
                           const at::Device& device, at::ScalarType float_dtype) {
    return construct_from_init(cls, make_init_values(get_init_inputs, seed, device, float_dtype),
                               seed, device, float_dtype);
}

py::object construct_from_init(py::handle cls, const py::list& init_values, std::uint64_t seed,
                               const at::Device& device, at::ScalarType float_dtype) {
    std::string name = device.str();
    seed_torch(seed);
    py::object model = call_on_device(cls, name, py::tuple(init_values));
    py::object module_type = py::module_::import("torch.nn").attr("Module");
    if (py::isinstance(model, module_type)) {
        py::dict kwargs;
        kwargs["device"] = py::module_::import("torch").attr("device")(name);
        kwargs["dtype"] = py::module_::import("torch").attr(dtype_name(float_dtype).c_str());
        model = model.attr("to")(**kwargs);
    }
    return model;
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
