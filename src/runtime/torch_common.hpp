#pragma once

// The one place the worker pulls in libtorch and its bundled pybind11.
#include <ATen/ATen.h>
#include <c10/core/GradMode.h>
#include <torch/csrc/autograd/python_variable.h>
#include <torch/csrc/utils/pybind.h>

#include <nlohmann/json.hpp>

namespace kbench::worker {

namespace py = pybind11;
using json = nlohmann::json;

// "float32" and friends: torch's Python names, used on the wire.
std::string dtype_name(at::ScalarType type);
at::ScalarType dtype_from_name(const std::string& name);

std::vector<std::int64_t> to_vector(at::IntArrayRef values);

// A device tensor's copy in pinned host memory (a host tensor as it is).
at::Tensor pinned_host_copy(const at::Tensor& t);

// Raised for faults that belong to the candidate and become its verdict.
class CandidateFault : public std::runtime_error {
  public:
    CandidateFault(std::string status, const std::string& message)
        : std::runtime_error(message), status_(std::move(status)) {}
    const std::string& status() const { return status_; }

  private:
    std::string status_;
};

// The current Python exception as text: type, message and traceback, capped.
std::string describe_python_error(const py::error_already_set& error);

}  // namespace kbench::worker
