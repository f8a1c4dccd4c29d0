#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "worker/torch_common.hpp"

namespace kbench::worker {

// Runs source text as a fresh module registered under module_name.
py::module_ exec_module(const std::string& code, const std::string& module_name,
                        const std::string& filename);

// Imports the file at path as module_name (Triton needs real files to read kernel source).
py::module_ import_file(const std::string& path, const std::string& module_name);

// Imports a candidate file as "kbench_candidate", the same way in the builder and in the sandbox
// (the build and the load must agree, or PyTorch builds the extension again). Extensions it
// builds through torch.utils.cpp_extension are linked against the libstdc++.so this process
// has loaded: a compiler that links libstdc++ statically (some toolchain wrappers do) would
// otherwise put a second copy beside libtorch's, and its streams break or crash on the first
// number they format (a TORCH_CHECK message with a value in it, for one).
py::module_ import_candidate(const std::string& path);

// torch.manual_seed: the CPU generator and every CUDA generator, as KernelBench seeds.
void seed_torch(std::uint64_t seed);

// KernelBench's per-trial seeds: torch.manual_seed(seed), then torch.randint per trial.
std::vector<std::uint64_t> trial_seeds(std::uint64_t seed, int trials);

// Calls fn(*args) with the device as PyTorch's default device.
py::object call_on_device(py::handle fn, const std::string& device, const py::tuple& args);

// Tensors moved to the device, floating ones cast to float_dtype; other values unchanged.
py::list prepare_values(py::handle values, const at::Device& device, at::ScalarType float_dtype);

// KernelBench's input rule: seed, get_inputs() with the device as default device, then the
// values through prepare_values.
py::list make_inputs(py::handle get_inputs, std::uint64_t seed, const at::Device& device,
                     at::ScalarType float_dtype);

// KernelBench's construction rule: seed, get_init_inputs(), seed again, cls(*init), then the
// module moved to the device and precision.
py::object construct_model(py::handle cls, py::handle get_init_inputs, std::uint64_t seed,
                           const at::Device& device, at::ScalarType float_dtype);

// A forward result as a list of items: a tensor alone, or the elements of a tuple or list.
struct FlatOutput {
    std::string kind;  // "tensor", "tuple", "list", or the Python type name of anything else
    std::vector<py::object> items;
};
FlatOutput flatten_output(const py::object& result);

// A non-tensor value on the wire (numbers, strings, None and lists of them); throws otherwise.
json value_to_json(py::handle value);
py::object value_from_json(const json& value);

std::string python_type_name(py::handle value);

at::ScalarType precision_dtype(const std::string& precision);

}  // namespace kbench::worker
