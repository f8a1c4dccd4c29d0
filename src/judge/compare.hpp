#pragma once

#include <optional>
#include <string>
#include <vector>

#include "judge/keyed_digest.hpp"
#include "protocol/sandbox_messages.hpp"
#include "runtime/torch_common.hpp"

namespace kbench::worker {

struct CompareSpec {
    double atol = 1e-4;
    double rtol = 1e-4;
    bool strict = true;  // NaN/Inf, subclass, aliasing and input checks on top of allclose
    std::string device;  // where outputs must be ("": where the reference's are)
};

struct CompareResult {
    bool ok = true;
    std::string reason;  // names the place (trial, output) and the largest differences
    double max_abs_diff = 0;
    double max_rel_diff = 0;
    bool values_compared = false;  // the structure matched, so values decided
};

// What the judge took of a reply: a digest of each output's bytes as they were when the reply
// came. A comparison given it reads each chunk of the candidate's outputs once, into memory of
// the judge's own, compares that, and checks that the chunks' digests add up to the reply's: bytes
// that changed after the reply (work of the candidate's still going on) are an integrity fault
// (rule output_written_after_reply), never compared.
struct TakenReply {
    const KeyedDigest* digest = nullptr;
    std::vector<std::uint64_t> digests;  // one per output
};

// Compares one call's outputs with the reference's. `claims` is the sandbox's account of what it
// returned (it can only make a call fail: it explains why); `captured` are the bytes the judge
// took from its own buffers, which decide whether the values match. Whether values are close is
// decided in float64, so no value a candidate returns can overflow a difference: equal outputs
// are seen at once, and float32 (or narrower) outputs whose every value is within half the
// tolerance in float32 are close in float64 too, so only the others are compared in float64.
CompareResult compare_outputs(const std::vector<at::Tensor>& reference,
                              const std::vector<at::Tensor>& captured,
                              const protocol::CallResult& claims, const CompareSpec& spec,
                              const std::string& where, const TakenReply* taken = nullptr);

// The values alone: copied[i] against reference[i] (same shapes; dtypes and devices may differ,
// differences are taken in float64, in chunks, on a GPU where either side is on one).
CompareResult compare_values(const std::vector<at::Tensor>& reference,
                             const std::vector<at::Tensor>& copied, const CompareSpec& spec,
                             const std::string& where, const TakenReply* taken = nullptr);

// Inputs after the call must equal the pristine copies bit for bit, except those the reference
// itself modifies. Returns the failure reason, if any.
std::optional<std::string> check_inputs_unchanged(const std::vector<at::Tensor>& pristine,
                                                  const std::vector<at::Tensor>& after,
                                                  const std::vector<bool>& reference_modifies,
                                                  const std::string& where);

// Bitwise equality, NaN payloads included.
bool bitwise_equal(const at::Tensor& a, const at::Tensor& b);

}  // namespace kbench::worker
