#pragma once

#include <optional>
#include <string>
#include <vector>

#include "worker/torch_common.hpp"

namespace kbench::worker {

struct CompareSpec {
    double atol = 1e-4;
    double rtol = 1e-4;
    bool strict = true;  // NaN/Inf, subclass, aliasing and input checks on top of allclose
};

struct CompareResult {
    bool ok = true;
    std::string reason;  // names the place (trial, output) and the largest differences
    double max_abs_diff = 0;
    double max_rel_diff = 0;
};

// Compares what the sandbox reported and copied for one call with the reference outputs.
// `report` is the sandbox's account of the call; `copied` are the judge's output buffers.
CompareResult compare_outputs(const std::vector<at::Tensor>& reference,
                              const std::vector<at::Tensor>& copied, const json& report,
                              const CompareSpec& spec, const std::string& where);

// Inputs after the call must equal the pristine copies bit for bit, except those the reference
// itself modifies. Returns the failure reason, if any.
std::optional<std::string> check_inputs_unchanged(const std::vector<at::Tensor>& pristine,
                                                  const std::vector<at::Tensor>& after,
                                                  const std::vector<bool>& reference_modifies,
                                                  const std::string& where);

// Bitwise equality, NaN payloads included.
bool bitwise_equal(const at::Tensor& a, const at::Tensor& b);

}  // namespace kbench::worker
