#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "runtime/torch_common.hpp"

namespace kbench::worker {

// Runs source text as a fresh module registered under module_name.
py::module_ exec_module(const std::string& code, const std::string& module_name,
                        const std::string& filename);

// Imports the file at path as module_name (Triton needs real files to read kernel source),
// with `preamble` (if any) run in the module's namespace first.
py::module_ import_file(const std::string& path, const std::string& module_name,
                        const std::string& preamble = "");

// Imports a candidate file as "kbench_candidate", after the preamble (KernelBench's mode: the
// reference's program, whose definitions the candidate may use). How its extensions are built
// (builder) or loaded from the verified build (sandbox) is set up first by
// kbench_worker.extensions.
py::module_ import_candidate(const std::string& path, const std::string& preamble = "");

// KernelBench's rules live in the worker package's Python module kbench_worker.rules; these
// call it.
py::module_ rules();

// torch.manual_seed: the CPU generator and every CUDA generator, as KernelBench seeds.
void seed_torch(std::uint64_t seed);

// KernelBench's per-trial seeds: torch.manual_seed(seed), then torch.randint per trial.
std::vector<std::uint64_t> trial_seeds(std::uint64_t seed, int trials);

// get_inputs() under the seed, tensors moved to the device and floating ones cast to
// float_dtype. on_device: made with the device as PyTorch's default device (strict mode's
// deliberate departure, for speed); otherwise on the CPU, as the reference harness makes them.
py::list make_inputs(py::handle get_inputs, std::uint64_t seed, const at::Device& device,
                     at::ScalarType float_dtype, bool on_device);

// KernelBench's construction rule, in two halves: the judge runs get_init_inputs() under the
// seed (make_init_values); whoever constructs seeds again and calls cls(*init) with no default
// device, then moves the module to the device and precision (construct_from_init).
py::list make_init_values(py::handle get_init_inputs, std::uint64_t seed, const at::Device& device,
                          at::ScalarType float_dtype);
py::object construct_from_init(py::handle cls, const py::list& init_values, std::uint64_t seed,
                               const at::Device& device, at::ScalarType float_dtype);

// The precision policy (rules.apply_precision).
void apply_precision_policy(Tf32 tf32);

// PyTorch's precision-relevant flags in this process, read from ATen's context (not through
// Python attributes a candidate could replace): TF32 per backend, float32 matmul precision,
// reduced-precision reductions, oneDNN's float32 precision, cuDNN benchmark and deterministic.
json precision_state();

// A forward result as a list of items, looked at without running any code of the candidate's:
// types are compared as C pointers, never through isinstance or attributes a class can override.
struct FlatOutput {
    std::string kind;               // "tensor", "tuple", "list", or the type's name
    bool plain = false;             // a plain tensor, or exactly a tuple or list (not a subclass)
    std::vector<py::object> items;  // the elements of a plain tuple or list, or the tensor
};
FlatOutput flatten_output(const py::object& result);

// Whether value is a tensor (possibly a subclass), and whether it is exactly torch.Tensor.
bool is_tensor(py::handle value);
bool is_plain_tensor(py::handle value);

// A non-tensor value on the wire (numbers, strings, None and lists of them); throws otherwise.
json value_to_json(py::handle value);
py::object value_from_json(const json& value);

// The type's C name (tp_name): no code of the value's class runs.
std::string python_type_name(py::handle value);

at::ScalarType precision_dtype(const std::string& precision);

}  // namespace kbench::worker
