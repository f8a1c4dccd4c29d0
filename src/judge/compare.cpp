#include "judge/compare.hpp"

#include <cmath>
#include <limits>
#include <sstream>

#include "protocol/fault.hpp"
#include "runtime/shared_tensor.hpp"

namespace kbench::worker {
namespace {

std::string shape_text(const std::vector<std::int64_t>& shape) {
    std::string out = "[";
    for (std::size_t i = 0; i < shape.size(); ++i)
        out += (i ? ", " : "") + std::to_string(shape[i]);
    return out + "]";
}

std::string index_text(std::int64_t flat, at::IntArrayRef sizes) {
    std::vector<std::int64_t> index(sizes.size());
    for (std::size_t d = sizes.size(); d-- > 0;) {
        index[d] = sizes[d] > 0 ? flat % sizes[d] : 0;
        flat = sizes[d] > 0 ? flat / sizes[d] : 0;
    }
    std::string out = "[";
    for (std::size_t d = 0; d < index.size(); ++d)
        out += (d ? ", " : "") + std::to_string(index[d]);
    return out + "]";
}

std::string number(double value) {
    std::ostringstream out;
    out.precision(6);
    out << value;
    return out.str();
}

// The structural checks: kind, count, tensor-ness, type, device, dtype, shape, aliasing.
std::optional<std::string> structural_failure(const std::vector<at::Tensor>& reference,
                                              const protocol::CallResult& claims,
                                              const CompareSpec& spec, const std::string& where) {
    const std::string& kind = claims.kind;
    if (kind != "tensor" && kind != "tuple" && kind != "list")
        return where + ": the candidate returned a " + kind +
               ", not a tensor or a tuple of tensors";
    if (spec.strict && kind != "tensor" && !claims.plain)
        return where + ": the candidate returned a subclass of " + kind +
               "; return a plain tuple or list, whose elements are there when forward returns";
    const auto& outputs = claims.outputs;
    if (outputs.size() != reference.size())
        return where + ": the candidate returned " + std::to_string(outputs.size()) +
               " output(s), the reference returns " + std::to_string(reference.size());
    for (std::size_t i = 0; i < outputs.size(); ++i) {
        const protocol::OutputReport& o = outputs[i];
        std::string at = where + " output " + std::to_string(i);
        if (!o.is_tensor) return at + ": a " + o.type + ", not a tensor";
        if (spec.strict && !o.plain)
            return at + ": a " + o.type + " (a tensor subclass); return a plain torch.Tensor";
        // The reference's outputs may wait on the host (a transient problem's).
        std::string want_device = spec.device.empty() ? reference[i].device().str() : spec.device;
        if (o.device != want_device) return at + ": on " + o.device + ", expected " + want_device;
        std::string want_dtype = dtype_name(reference[i].scalar_type());
        if (o.dtype != want_dtype) return at + ": dtype " + o.dtype + ", expected " + want_dtype;
        std::vector<std::int64_t> want_shape = to_vector(reference[i].sizes());
        if (o.shape != want_shape)
            return at + ": shape " + shape_text(o.shape) + ", expected " + shape_text(want_shape);
        if (spec.strict && o.aliases_input >= 0)
            return at + ": shares memory with input " + std::to_string(o.aliases_input) +
                   "; return a new tensor, not an input or a view of one";
        if (!o.copied) return at + ": the sandbox could not copy it";
    }
    return std::nullopt;
}

}  // namespace

bool bitwise_equal(const at::Tensor& a, const at::Tensor& b) {
    if (a.sizes() != b.sizes() || a.scalar_type() != b.scalar_type()) return false;
    if (a.numel() == 0) return true;
    return at::equal(as_words(a), as_words(b));
}

namespace {

// Running totals over one output, gathered chunk by chunk so that memory stays bounded.
struct ValueStats {
    double max_abs = 0;
    double max_rel = 0;
    std::int64_t mismatched = 0;
    std::int64_t nonfinite = 0;  // NaN or Inf where the reference is finite
    std::int64_t first_nonfinite = -1;
    std::int64_t worst = -1;  // the mismatch with the largest difference
    double worst_excess = -1;
    // The values at those places as the comparison read them (got, expected).
    double first_nonfinite_got = 0, first_nonfinite_expected = 0;
    double worst_got = 0, worst_expected = 0;
};

void accumulate(const at::Tensor& ref, const at::Tensor& got, std::int64_t offset,
                const CompareSpec& spec, ValueStats& stats) {
    at::Tensor ref_finite = at::isfinite(ref);
    at::Tensor both_finite = ref_finite & at::isfinite(got);
    at::Tensor diff = (got - ref).abs();
    at::Tensor finite_diff = at::where(both_finite, diff, at::zeros({}, diff.options()));
    stats.max_abs = std::max(stats.max_abs, finite_diff.max().item<double>());
    stats.max_rel = std::max(stats.max_rel,
                             (finite_diff / ref.abs().clamp_min(spec.atol)).max().item<double>());
    // Within tolerance of a finite reference (against an infinity the tolerance is infinite
    // too, so any value would pass), or the same value (covers infinities), or NaN where the
    // reference has NaN in strict mode (KernelBench's allclose treats every NaN as a mismatch).
    at::Tensor close = (ref_finite & (diff <= spec.atol + spec.rtol * ref.abs())) | (got == ref);
    if (spec.strict) close = close | (at::isnan(ref) & at::isnan(got));
    at::Tensor bad_nonfinite = ref_finite & ~both_finite;
    std::int64_t nonfinite = bad_nonfinite.sum().item<std::int64_t>();
    if (nonfinite > 0 && stats.first_nonfinite < 0) {
        std::int64_t k = bad_nonfinite.to(at::kByte).argmax().item<std::int64_t>();
        stats.first_nonfinite = offset + k;
        stats.first_nonfinite_got = got[k].item<double>();
        stats.first_nonfinite_expected = ref[k].item<double>();
    }
    stats.nonfinite += nonfinite;
    std::int64_t mismatched = (~close).sum().item<std::int64_t>();
    if (mismatched == 0) return;
    stats.mismatched += mismatched;
    at::Tensor excess = at::where(close, at::full({}, -1.0, diff.options()),
                                  at::nan_to_num(diff, 0.0, 1e300, 1e300));
    auto [value, index] = excess.max(0);
    double worst = value.item<double>();
    if (worst > stats.worst_excess) {
        stats.worst_excess = worst;
        std::int64_t k = index.item<std::int64_t>();
        stats.worst = offset + k;
        stats.worst_got = got[k].item<double>();
        stats.worst_expected = ref[k].item<double>();
    }
}

// The float32 screen of one chunk (float32 or a narrower floating type, the reference's and the
// copy's alike): true when every value is within half the tolerance, as float32 computes it,
// which float32's rounding (a few units in the last place) cannot carry past the tolerance as
// float64 computes it; then the largest differences are those float32 computes (exact for
// values within a factor of two of each other, which values that close are). False: the chunk
// must be compared in float64.
bool screen(const at::Tensor& ref_chunk, const at::Tensor& got_chunk, const CompareSpec& spec,
            ValueStats& stats) {
    at::Tensor ref = ref_chunk.to(at::kFloat);
    at::Tensor got = got_chunk.to(at::kFloat);
    at::Tensor diff = (got - ref).abs_();
    at::Tensor ref_abs = ref.abs();
    at::Tensor half_tolerance = ref_abs.mul(0.5 * spec.rtol).add_(0.5 * spec.atol);
    // NaN anywhere (a NaN value, or an infinity against anything) fails the comparison.
    if (!at::le(diff, half_tolerance).all().item<bool>()) return false;
    double max_abs = diff.max().item<double>();
    if (!std::isfinite(max_abs)) return false;  // a tolerance past float32's range
    stats.max_abs = std::max(stats.max_abs, max_abs);
    stats.max_rel =
        std::max(stats.max_rel, diff.div_(ref_abs.clamp_min_(spec.atol)).max().item<double>());
    return true;
}

bool screens(const at::Tensor& ref, const at::Tensor& got, const CompareSpec& spec) {
    auto narrow_float = [](at::ScalarType t) {
        return t == at::kFloat || t == at::kHalf || t == at::kBFloat16;
    };
    // A tolerance of zero asks for equal values, which the equality check already saw.
    return ref.scalar_type() == got.scalar_type() && narrow_float(ref.scalar_type()) &&
           spec.atol > 0 && spec.rtol >= 0;
}

}  // namespace

CompareResult compare_outputs(const std::vector<at::Tensor>& reference,
                              const std::vector<at::Tensor>& copied,
                              const protocol::CallResult& claims, const CompareSpec& spec,
                              const std::string& where, const TakenReply* taken) {
    if (auto failure = structural_failure(reference, claims, spec, where)) {
        CompareResult result;
        result.ok = false;
        result.reason = *failure;
        return result;
    }
    return compare_values(reference, copied, spec, where, taken);
}

CompareResult compare_values(const std::vector<at::Tensor>& reference,
                             const std::vector<at::Tensor>& copied, const CompareSpec& spec,
                             const std::string& where, const TakenReply* taken) {
    CompareResult result;
    result.values_compared = true;
    // Elements compared at a time: the float64 temporaries of a chunk stay within 200 MiB.
    constexpr std::int64_t kChunk = 1 << 22;
    for (std::size_t i = 0; i < reference.size(); ++i) {
        const at::Tensor& ref_raw = reference[i];
        if (ref_raw.numel() == 0) continue;
        // float64 whatever the dtype: differences of float32 values cannot overflow there.
        const auto work = at::kDouble;
        at::Tensor ref = ref_raw.reshape(-1);
        at::Tensor got = copied[i].reshape(-1);
        // On a GPU where either side is (a reference at a wider precision may be on the host):
        // a chunk moves, never the whole.
        at::Device place = got.device().is_cuda() ? got.device() : ref.device();
        if (taken && (!taken->digest || taken->digests.size() != reference.size()))
            throw std::logic_error("a reply's digests do not match its outputs");
        bool verify = taken != nullptr;
        std::uint64_t read_digest = 0;
        ValueStats stats;
        bool screened = screens(ref, got, spec);
        bool equal = true;
        for (std::int64_t start = 0; start < ref.numel(); start += kChunk) {
            std::int64_t length = std::min(kChunk, ref.numel() - start);
            at::Tensor ref_chunk = ref.narrow(0, start, length).to(place);
            at::Tensor got_chunk = got.narrow(0, start, length);
            // Read once, into the judge's memory: what is compared is what is digested.
            got_chunk = verify || got_chunk.device() != place
                            ? got_chunk.to(at::TensorOptions().device(place), false, true)
                            : got_chunk;
            if (verify) read_digest += taken->digest->range(got_chunk, start);
            // The same values (an equality check costs a fortieth of the comparison on a GPU):
            // no difference. NaN is never equal, so NaNs take the full comparison.
            if (got_chunk.scalar_type() == ref_chunk.scalar_type() &&
                at::equal(ref_chunk, got_chunk))
                continue;
            equal = false;
            if (screened && screen(ref_chunk, got_chunk, spec, stats)) continue;
            accumulate(ref_chunk.to(work), got_chunk.to(work), start, spec, stats);
        }
        if (verify && read_digest != taken->digests[i])
            throw protocol::FaultError(protocol::FaultKind::integrity,
                                       where + " output " + std::to_string(i) +
                                           " changed after the sandbox had replied: the "
                                           "candidate's work went on after its call returned",
                                       "output_written_after_reply", where);
        if (equal) continue;
        result.max_abs_diff = std::max(result.max_abs_diff, stats.max_abs);
        result.max_rel_diff = std::max(result.max_rel_diff, stats.max_rel);
        if (stats.mismatched == 0) continue;

        result.ok = false;
        std::string at = where + " output " + std::to_string(i);
        std::string total = std::to_string(ref.numel());
        // The values as the comparison read them (the candidate's buffer may hold others now).
        if (spec.strict && stats.nonfinite > 0) {
            std::int64_t first = stats.first_nonfinite;
            result.reason = at + ": " + std::to_string(stats.nonfinite) + " of " + total +
                            " values are NaN or Inf where the reference is finite (first at " +
                            index_text(first, ref_raw.sizes()) + ": got " +
                            number(stats.first_nonfinite_got) + ", expected " +
                            number(stats.first_nonfinite_expected) + ")";
            return result;
        }
        result.reason =
            at + ": " + std::to_string(stats.mismatched) + " of " + total +
            " values differ beyond atol=rtol=" + number(spec.atol) + "; largest difference " +
            number(stats.max_abs) + " (at " + index_text(stats.worst, ref_raw.sizes()) + ": got " +
            number(stats.worst_got) + ", expected " + number(stats.worst_expected) + ")";
        return result;
    }
    return result;
}

std::optional<std::string> check_inputs_unchanged(const std::vector<at::Tensor>& pristine,
                                                  const std::vector<at::Tensor>& after,
                                                  const std::vector<bool>& reference_modifies,
                                                  const std::string& where) {
    for (std::size_t j = 0; j < pristine.size(); ++j) {
        if (!pristine[j].defined() || reference_modifies[j]) continue;
        if (bitwise_equal(pristine[j], after[j])) continue;
        std::int64_t changed = 0;
        if (pristine[j].sizes() == after[j].sizes()) {
            at::Tensor a = pristine[j].contiguous().reshape(-1).view(at::kByte);
            at::Tensor b = after[j].contiguous().reshape(-1).view(at::kByte);
            changed = (a != b).sum().item<std::int64_t>();
        }
        return where + ": the candidate modified input " + std::to_string(j) + " (" +
               std::to_string(changed) +
               " bytes changed); the reference leaves it unchanged, so the candidate must too";
    }
    return std::nullopt;
}

}  // namespace kbench::worker
