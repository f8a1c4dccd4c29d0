"""kbench's comparison of outputs (src/judge/compare.cpp) against a float64 comparison written
here: its shortcuts (equal outputs, the float32 screen of values within half the tolerance) must
decide exactly as float64 does, and report the same largest differences.

Needs the built worker module (ctest sets PYTHONPATH to the build's python folder); skipped
without it.
"""

import math

import pytest
import torch

worker = pytest.importorskip("kbench_worker._kbench_worker")

ATOL = RTOL = 1e-4


def expected(ref, got, atol=ATOL, rtol=RTOL, strict=True):
    """Every value close, the largest differences where both are finite, in float64."""
    r, g = ref.double().reshape(-1), got.double().reshape(-1)
    diff = (g - r).abs()
    close = (diff <= atol + rtol * r.abs()) | (g == r)
    if strict:
        close |= r.isnan() & g.isnan()
    finite = r.isfinite() & g.isfinite()
    d = torch.where(finite, diff, torch.zeros((), dtype=torch.float64))
    rel = d / r.abs().clamp_min(atol)
    return bool(close.all()), float(d.max()), float(rel.max())


def compare(ref, got, atol=ATOL, rtol=RTOL, strict=True):
    return worker.compare_values([ref], [got], atol, rtol, strict)


def agrees(ref, got, **kw):
    ok, max_abs, max_rel = expected(ref, got, **kw)
    r = compare(ref, got, **kw)
    assert r["ok"] == ok, (r, ok)
    assert r["max_abs_diff"] == pytest.approx(max_abs, rel=1e-6, abs=0)
    assert r["max_rel_diff"] == pytest.approx(max_rel, rel=1e-6, abs=0)
    return r


def test_equal_outputs_have_no_difference():
    ref = torch.randn(1000)
    r = agrees(ref, ref.clone())
    assert r["ok"] and r["max_abs_diff"] == 0 and r["max_rel_diff"] == 0


def test_values_within_half_the_tolerance_are_close_with_their_differences():
    torch.manual_seed(1)
    ref = torch.randn(4096) * 10
    got = ref + (torch.rand(4096) - 0.5) * 1e-4 * (1 + ref.abs())  # within half
    r = agrees(ref, got)
    assert r["ok"] and r["max_abs_diff"] > 0


@pytest.mark.parametrize("factor", [0.51, 0.9, 0.999, 1.001, 1.5, 100.0])
def test_values_near_the_tolerance_decide_as_float64_does(factor):
    torch.manual_seed(2)
    ref = torch.randn(2048) * 3
    got = ref.clone()
    # One value at factor x its tolerance, the rest well within it.
    got[777] = ref[777] + factor * (ATOL + RTOL * abs(float(ref[777])))
    r = agrees(ref, got)
    assert r["ok"] == (factor < 1), r
    if not r["ok"]:
        assert "1 of 2048 values differ" in r["reason"]


def test_nan_and_infinity():
    ref = torch.tensor([1.0, float("nan"), float("inf"), -2.0])
    assert compare(ref, ref.clone())["ok"]  # NaN where the reference has NaN (strict)
    assert not compare(ref, ref.clone(), strict=False)["ok"]
    got = ref.clone()
    got[0] = float("nan")
    r = compare(ref, got)
    assert not r["ok"] and "NaN or Inf" in r["reason"]
    got = ref.clone()
    got[3] = float("inf")
    assert not compare(ref, got)["ok"]
    agrees(torch.tensor([1.0, float("inf")]), torch.tensor([1.0, float("inf")]))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64])
def test_every_floating_type(dtype):
    torch.manual_seed(3)
    ref = (torch.randn(3000) * 4).to(dtype)
    tol = 1e-2
    noise = ((torch.rand(3000) - 0.5) * tol * 1.2).to(dtype)
    got = ref + noise
    agrees(ref, got, atol=tol, rtol=tol)
    agrees(ref, ref + noise / 4, atol=tol, rtol=tol)


def test_integer_outputs():
    ref = torch.arange(100)
    assert compare(ref, ref.clone())["ok"]
    got = ref.clone()
    got[5] += 1
    assert not compare(ref, got)["ok"]


def test_random_cases_agree_with_float64():
    gen = torch.Generator().manual_seed(4)
    for case in range(200):
        n = int(torch.randint(1, 3000, (1,), generator=gen))
        scale = 10 ** float(torch.randint(-6, 6, (1,), generator=gen))
        ref = torch.randn(n, generator=gen) * scale
        spread = 10 ** float(torch.rand(1, generator=gen) * 4 - 5)  # 1e-5 .. 1e-1
        got = ref + torch.randn(n, generator=gen) * spread * (1 + ref.abs())
        if case % 7 == 0:
            got[int(torch.randint(0, n, (1,), generator=gen))] = float("nan")
        if case % 11 == 0:
            ref[0] = got[0] = float("inf")
        agrees(ref, got)


def test_outputs_larger_than_a_chunk_mix_the_screen_and_float64():
    # kbench compares 2^24 values at a time: a first chunk the screen passes, a second with one
    # value it leaves to float64 (close), then one past the tolerance.
    n = (1 << 24) + 1000
    ref = torch.ones(n)
    got = ref.clone()
    got[: 1 << 24] += 1e-5
    got[n - 10] = 1 + 1.8e-4
    r = agrees(ref, got)
    assert r["ok"]
    got[n - 5] = 1 + 3e-4
    r = compare(ref, got)
    assert not r["ok"] and "1 of " in r["reason"] and math.isclose(r["max_abs_diff"], 3e-4, rel_tol=1e-3)


# The judge keeps a keyed digest of a reply, not a copy: the comparison reads the candidate's
# outputs chunk by chunk and checks what it read against the reply's digest.


def test_outputs_read_as_they_were_at_the_reply_compare_as_before():
    torch.manual_seed(3)
    ref = torch.randn(5_000_001)  # more than one chunk, and a table's length not a divisor
    got = ref + 1e-6
    r = worker.compare_values([ref], [got], ATOL, RTOL, True, taken=[got.clone()])
    assert r["ok"] and not r["changed_after_reply"]
    wrong = got.clone()
    wrong[4_999_999] = 7.0
    r = worker.compare_values([ref], [wrong], ATOL, RTOL, True, taken=[wrong.clone()])
    assert not r["ok"] and not r["changed_after_reply"] and "1 of 5000001" in r["reason"]


@pytest.mark.parametrize(
    "dtype", [torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.int64, torch.bool]
)
@pytest.mark.parametrize("where", [0, 4_194_303, 4_194_304, 4_500_000])
def test_any_byte_changed_after_the_reply_is_caught(dtype, where):
    torch.manual_seed(4)
    ref = (torch.randn(4_500_001) * 3).to(dtype)
    at_reply = ref.clone()
    later = at_reply.clone()
    later.view(torch.uint8)[where * later.element_size()] ^= 1  # one bit, anywhere
    r = worker.compare_values([ref], [later], ATOL, RTOL, True, taken=[at_reply])
    assert r["changed_after_reply"] and not r["ok"]
    assert "changed after the sandbox had replied" in r["reason"]


def test_changes_that_keep_a_plain_word_sum_are_caught():
    ref = torch.arange(64, dtype=torch.int32)
    at_reply = ref.clone()
    later = at_reply.clone()
    later[3] += 1  # the sum of words stays the same: a plain sum would not see it
    later[9] -= 1
    r = worker.compare_values([ref], [later], 0.0, 0.0, True, taken=[at_reply])
    assert r["changed_after_reply"]


@pytest.mark.parametrize("dtype", [torch.float64, torch.int64, torch.complex64, torch.complex128])
def test_changes_at_the_top_bits_of_wide_words_are_caught(dtype):
    # Flipping the top bit of two 64-bit words adds 2^63 twice: with 64-bit words times odd
    # factors that cancels whatever the key. Two sign flips of float64 or int64 values, two of
    # complex64's imaginary parts, or negating one complex128 value.
    for attempt in range(8):
        ref = torch.randn(1000, dtype=torch.float64).to(dtype)
        later = ref.clone()
        if dtype == torch.complex128:
            later[attempt] = -later[attempt]
        elif dtype == torch.int64:
            later[attempt] ^= -(2**63)
            later[attempt + 100] ^= -(2**63)
        else:
            later[attempt] = -later[attempt] if dtype != torch.complex64 else later[attempt].conj()
            later[attempt + 100] = (
                -later[attempt + 100] if dtype != torch.complex64 else later[attempt + 100].conj()
            )
        r = worker.compare_values([ref], [later], ATOL, RTOL, True, taken=[ref.clone()])
        assert r["changed_after_reply"], (dtype, attempt)


def test_the_message_names_the_values_as_they_were_compared():
    ref = torch.zeros(100)
    got = ref.clone()
    got[7] = 5.0
    r = worker.compare_values([ref], [got], ATOL, RTOL, True, taken=[got.clone()])
    assert not r["ok"] and "got 5, expected 0" in r["reason"], r["reason"]
