#include "judge/compare.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "protocol/fault.hpp"

namespace kbench::worker {
namespace {

std::vector<at::Tensor> one(const at::Tensor& t) {
    return {t};
}

at::Tensor values(std::int64_t n, at::ScalarType dtype = at::kFloat) {
    return at::linspace(-3, 5, n, at::TensorOptions().dtype(at::kDouble)).to(dtype);
}

// A reply's account of `outputs` as an honest sandbox gives it.
protocol::CallResult claims_for(const std::vector<at::Tensor>& outputs) {
    protocol::CallResult claims;
    claims.kind = outputs.size() == 1 ? "tensor" : "tuple";
    claims.plain = true;
    for (const at::Tensor& t : outputs) {
        protocol::OutputReport o;
        o.is_tensor = o.plain = o.copied = true;
        o.type = "Tensor";
        o.shape = to_vector(t.sizes());
        o.dtype = dtype_name(t.scalar_type());
        o.device = t.device().str();
        claims.outputs.push_back(o);
    }
    return claims;
}

TEST(CompareValues, EqualOutputsHaveNoDifference) {
    at::Tensor ref = values(1000);
    CompareResult r = compare_values(one(ref), one(ref.clone()), {}, "trial 0");
    EXPECT_TRUE(r.ok);
    EXPECT_TRUE(r.values_compared);
    EXPECT_EQ(r.max_abs_diff, 0);
    EXPECT_EQ(r.reason, "");
}

TEST(CompareValues, WithinToleranceIsCloseAndReportsTheLargestDifference) {
    at::Tensor ref = values(1000);
    at::Tensor got = ref.clone();
    got[10] += 2e-5f;  // |ref| below 1: within atol + rtol |ref|
    CompareResult r = compare_values(one(ref), one(got), {}, "trial 0");
    EXPECT_TRUE(r.ok) << r.reason;
    EXPECT_NEAR(r.max_abs_diff, 2e-5, 1e-6);
}

TEST(CompareValues, AMismatchInALaterChunkIsNamedByItsIndex) {
    // Past one chunk of 2^22 elements, in a two-dimensional output.
    std::int64_t rows = 3, cols = (std::int64_t(1) << 21) + 5;
    at::Tensor ref = at::ones({rows, cols});
    at::Tensor got = ref.clone();
    got[2][7] = 1.5f;
    got[2][9] = 1.25f;
    CompareSpec spec;
    spec.atol = spec.rtol = 1e-2;
    CompareResult r = compare_values(one(ref), one(got), spec, "trial 3");
    EXPECT_FALSE(r.ok);
    EXPECT_EQ(r.reason, "trial 3 output 0: 2 of " + std::to_string(rows * cols) +
                            " values differ beyond atol=rtol=0.01; largest difference 0.5 (at "
                            "[2, 7]: got 1.5, expected 1)");
    EXPECT_DOUBLE_EQ(r.max_abs_diff, 0.5);
}

TEST(CompareValues, NaNWhereTheReferenceIsFiniteIsNamedInStrictMode) {
    at::Tensor ref = values(100);
    at::Tensor got = ref.clone();
    got[42] = std::numeric_limits<float>::quiet_NaN();
    got[50] = std::numeric_limits<float>::infinity();
    CompareResult strict = compare_values(one(ref), one(got), {}, "trial 0");
    EXPECT_FALSE(strict.ok);
    EXPECT_NE(strict.reason.find("2 of 100 values are NaN or Inf where the reference is finite "
                                 "(first at [42]: got nan"),
              std::string::npos)
        << strict.reason;
    CompareSpec loose;
    loose.strict = false;
    CompareResult r = compare_values(one(ref), one(got), loose, "trial 0");
    EXPECT_FALSE(r.ok);
    EXPECT_NE(r.reason.find("2 of 100 values differ"), std::string::npos) << r.reason;
}

TEST(CompareValues, NaNAgainstNaNIsCloseOnlyInStrictMode) {
    at::Tensor ref = values(100);
    ref[3] = std::numeric_limits<float>::quiet_NaN();
    at::Tensor got = ref.clone();
    EXPECT_TRUE(compare_values(one(ref), one(got), {}, "t").ok);
    CompareSpec loose;
    loose.strict = false;  // KernelBench's allclose: every NaN is a mismatch
    CompareResult r = compare_values(one(ref), one(got), loose, "t");
    EXPECT_FALSE(r.ok);
    EXPECT_NE(r.reason.find("1 of 100 values differ"), std::string::npos) << r.reason;
}

TEST(CompareValues, EqualInfinitiesAreClose) {
    at::Tensor ref = values(100);
    ref[0] = std::numeric_limits<float>::infinity();
    ref[1] = -std::numeric_limits<float>::infinity();
    at::Tensor got = ref.clone();
    got[5] += 1e-6f;  // not bitwise equal: the values are compared
    EXPECT_TRUE(compare_values(one(ref), one(got), {}, "t").ok);
    // Against an infinity, a tolerance is infinite too: only the same infinity is close.
    for (float wrong : {std::numeric_limits<float>::infinity(), 1.0f, 0.0f}) {
        at::Tensor other = got.clone();
        other[1] = wrong;
        CompareResult r = compare_values(one(ref), one(other), {}, "t");
        EXPECT_FALSE(r.ok) << wrong;
        EXPECT_NE(r.reason.find("1 of 100 values differ"), std::string::npos) << r.reason;
    }
}

TEST(CompareValues, NoFloat32OverflowHidesADifference) {
    // float32's largest values: their difference overflows float32, not float64.
    float big = std::numeric_limits<float>::max();
    at::Tensor ref = at::full({8}, big);
    at::Tensor got = at::full({8}, -big);
    CompareResult r = compare_values(one(ref), one(got), {}, "t");
    EXPECT_FALSE(r.ok);
    EXPECT_NE(r.reason.find("8 of 8 values differ"), std::string::npos) << r.reason;
}

TEST(CompareValues, AWiderReferenceIsComparedWithTheCandidatesValues) {
    // Arbitration: the reference at float64, the candidate's float32 outputs.
    at::Tensor ref = values(1000, at::kDouble);
    at::Tensor got = ref.to(at::kFloat);
    EXPECT_TRUE(compare_values(one(ref), one(got), {}, "t").ok);
    got[999] += 1.0f;
    EXPECT_FALSE(compare_values(one(ref), one(got), {}, "t").ok);
}

TEST(CompareValues, OutputsChangedAfterTheReplyAreAnIntegrityFault) {
    const KeyedDigest digest(at::Device(at::kCPU));
    at::Tensor ref = values(5000);
    at::Tensor got = ref.clone();
    TakenReply taken{&digest, {digest.of(got)}};
    EXPECT_TRUE(compare_values(one(ref), one(got), {}, "t", &taken).ok);
    // The same values the reply had: still close.
    got[17] = got[17].item<float>();
    EXPECT_TRUE(compare_values(one(ref), one(got), {}, "t", &taken).ok);
    // Written after the reply: caught, never compared (even to the right values).
    at::Tensor later = ref.clone();
    later[17] += 1.0f;
    TakenReply at_reply{&digest, {digest.of(later)}};
    try {
        compare_values(one(ref), one(ref.clone()), {}, "trial 1", &at_reply);
        FAIL() << "no fault";
    } catch (const protocol::FaultError& e) {
        EXPECT_EQ(e.rule(), "output_written_after_reply");
        EXPECT_EQ(e.kind(), protocol::FaultKind::integrity);
    }
}

TEST(CompareOutputs, TheStructureIsCheckedBeforeTheValues) {
    at::Tensor ref = values(12).reshape({3, 4});
    auto claims = claims_for(one(ref));
    EXPECT_TRUE(compare_outputs(one(ref), one(ref.clone()), claims, {}, "t").ok);

    auto wrong_shape = claims;
    wrong_shape.outputs[0].shape = {4, 3};
    EXPECT_EQ(compare_outputs(one(ref), one(ref.clone()), wrong_shape, {}, "t").reason,
              "t output 0: shape [4, 3], expected [3, 4]");
    auto wrong_dtype = claims;
    wrong_dtype.outputs[0].dtype = "float16";
    EXPECT_EQ(compare_outputs(one(ref), one(ref.clone()), wrong_dtype, {}, "t").reason,
              "t output 0: dtype float16, expected float32");
    auto two = claims_for({ref, ref});
    EXPECT_EQ(compare_outputs(one(ref), one(ref.clone()), two, {}, "t").reason,
              "t: the candidate returned 2 output(s), the reference returns 1");

    // Strict mode alone refuses subclasses and outputs over an input's memory.
    auto subclass = claims;
    subclass.outputs[0].plain = false;
    subclass.outputs[0].type = "MyTensor";
    auto aliasing = claims;
    aliasing.outputs[0].aliases_input = 0;
    CompareSpec loose;
    loose.strict = false;
    for (const auto& c : {subclass, aliasing}) {
        CompareResult strict = compare_outputs(one(ref), one(ref.clone()), c, {}, "t");
        EXPECT_FALSE(strict.ok);
        EXPECT_FALSE(strict.values_compared);
        EXPECT_TRUE(compare_outputs(one(ref), one(ref.clone()), c, loose, "t").ok);
    }
    auto not_copied = claims;
    not_copied.outputs[0].copied = false;
    EXPECT_EQ(compare_outputs(one(ref), one(ref.clone()), not_copied, loose, "t").reason,
              "t output 0: the sandbox could not copy it");
}

TEST(BitwiseEqual, NaNPayloadsAndSignedZerosDiffer) {
    at::Tensor a = at::zeros({4});
    at::Tensor b = a.clone();
    EXPECT_TRUE(bitwise_equal(a, b));
    b[1] = -0.0f;  // == 0.0, not the same bits
    EXPECT_FALSE(bitwise_equal(a, b));
    at::Tensor nan1 = at::full({2}, std::numeric_limits<float>::quiet_NaN());
    at::Tensor nan2 = nan1.clone();
    EXPECT_TRUE(bitwise_equal(nan1, nan2));
    nan2.view(at::kInt)[0] += 1;  // another NaN
    EXPECT_FALSE(bitwise_equal(nan1, nan2));
    EXPECT_FALSE(bitwise_equal(a, a.to(at::kDouble)));
    EXPECT_FALSE(bitwise_equal(a, a.reshape({2, 2})));
}

TEST(CheckInputsUnchanged, CountsTheBytesChangedExceptWhereTheReferenceChangesThem) {
    std::vector<at::Tensor> pristine{values(16), values(16)};
    std::vector<at::Tensor> after{pristine[0].clone(), pristine[1].clone()};
    EXPECT_FALSE(check_inputs_unchanged(pristine, after, {false, false}, "t"));
    after[1][3] = -0.0f;
    after[1][4] = 100.0f;
    auto reason = check_inputs_unchanged(pristine, after, {false, false}, "trial 2");
    ASSERT_TRUE(reason);
    EXPECT_EQ(*reason,
              "trial 2: the candidate modified input 1 (8 bytes changed); the reference leaves it "
              "unchanged, so the candidate must too");
    EXPECT_FALSE(check_inputs_unchanged(pristine, after, {false, true}, "t"));
    // An input the judge no longer keeps (a transient problem's) is not checked here.
    std::vector<at::Tensor> dropped{pristine[0], at::Tensor()};
    EXPECT_FALSE(check_inputs_unchanged(dropped, after, {false, false}, "t"));
}

}  // namespace
}  // namespace kbench::worker
