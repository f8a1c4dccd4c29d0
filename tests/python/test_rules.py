"""kbench_worker.rules against the reference harness's rules.

Three tiers:
- always: the rules on programs of this file (seeding, trial seeds, inputs, construction with no
  default device, legacy-constructor parameters, tolerance, precision policy, arbiter);
- with the KernelBench problem set (KBENCH_KERNELBENCH_JSONL, else ../shared/kernelbench/
  kernelbench.jsonl beside the checkout): real problems, against values pinned from the
  harness at harness.COMMIT (harness_pins.json, made by pin_harness.py);
- with a checkout of the harness (KBENCH_HARNESS_DIR): the same problems against the harness's
  own functions, run side by side, and the pins against it.
"""

import json
import math
import os

import pytest
import torch
import torch.nn as nn

import harness
from kbench_worker import rules

HERE = os.path.dirname(os.path.abspath(__file__))
PINS = json.load(open(os.path.join(HERE, "harness_pins.json")))
CPU = torch.device("cpu")


def problem_set():
    path = os.environ.get("KBENCH_KERNELBENCH_JSONL") or os.path.join(
        HERE, "..", "..", "..", "shared", "kernelbench", "kernelbench.jsonl")
    if not os.path.exists(path):
        return None
    return {(p["level"], p["problem_id"]): p for p in map(json.loads, open(path))}


PROBLEMS = problem_set()
needs_problems = pytest.mark.skipif(PROBLEMS is None, reason="no KernelBench problem set here "
                                    "(set KBENCH_KERNELBENCH_JSONL)")
HARNESS_DIR = os.environ.get("KBENCH_HARNESS_DIR")
needs_harness = pytest.mark.skipif(not HARNESS_DIR, reason="no harness checkout "
                                   "(set KBENCH_HARNESS_DIR)")


def test_trial_seeds_are_the_harness_s():
    assert rules.trial_seeds(42, 5) == PINS["trial_seeds_42"]


def test_tolerance():
    assert rules.tolerance("fp32") == 1e-4
    assert rules.tolerance("fp16") == rules.tolerance("bf16") == 1e-2
    assert rules.tolerance("fp32", "on") == 1e-2
    assert rules.tolerance("fp32", "default") == 1e-4


def test_inputs_follow_the_seed_and_cast_only_floats():
    def get_inputs():
        return [torch.randn(3, 4), torch.randint(0, 10, (5,)), 0.5]

    a = rules.make_inputs(get_inputs, 7, CPU, torch.float16, on_device=False)
    b = rules.make_inputs(get_inputs, 7, CPU, torch.float16, on_device=False)
    assert a[0].dtype == torch.float16 and torch.equal(a[0], b[0])
    assert a[1].dtype == torch.int64  # indices stay integers (a deliberate departure)
    assert a[2] == 0.5
    torch.manual_seed(7)
    assert torch.equal(a[0], torch.randn(3, 4).half())


class RecordsDevice(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.made_on = torch.empty(1).device
        self.linear = nn.Linear(width, width)


def test_models_are_constructed_on_the_cpu_then_moved():
    with torch.device("meta"):
        model = rules.construct_model(RecordsDevice, [4], 42, CPU, torch.float32)
    assert model.made_on == CPU  # on the CPU, whatever default device the caller set
    model = rules.construct_model(RecordsDevice, [4], 42, torch.device("meta"), torch.float16)
    assert model.linear.weight.device.type == "meta"
    assert model.linear.weight.dtype == torch.float16


class Standard(nn.Module):
    def __init__(self, n, m):
        super().__init__()
        self.linear = nn.Linear(n, m)


class Legacy(nn.Module):
    """Parameters from the legacy torch.Tensor constructor, initialised as nn.Linear does."""

    def __init__(self, n, m):
        super().__init__()
        self.weight = nn.Parameter(torch.Tensor(m, n))
        self.bias = nn.Parameter(torch.Tensor(m))
        nn.init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        bound = 1 / math.sqrt(n)
        nn.init.uniform_(self.bias, -bound, bound)


def test_legacy_constructor_parameters_match_the_reference_s():
    a = rules.construct_model(Standard, [16, 8], 42, CPU, torch.float32)
    b = rules.construct_model(Legacy, [16, 8], 42, CPU, torch.float32)
    assert torch.equal(a.linear.weight, b.weight) and torch.equal(a.linear.bias, b.bias)


def test_precision_policy_and_full_precision_block():
    saved = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32,
             torch.get_float32_matmul_precision())
    try:
        rules.apply_precision("on")
        assert torch.backends.cuda.matmul.allow_tf32 and torch.backends.cudnn.allow_tf32
        assert torch.get_float32_matmul_precision() == "high"
        with rules.FullPrecision():
            assert not torch.backends.cuda.matmul.allow_tf32
            assert not torch.backends.cudnn.allow_tf32
            assert torch.get_float32_matmul_precision() == "highest"
        assert torch.backends.cuda.matmul.allow_tf32 and torch.backends.cudnn.allow_tf32
        rules.apply_precision("off")
        assert not torch.backends.cuda.matmul.allow_tf32
        assert not torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction
        with pytest.raises(ValueError):
            rules.apply_precision("sometimes")
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved[:2]
        torch.set_float32_matmul_precision(saved[2])


class LooseSum(nn.Module):
    def forward(self, x):
        steps = torch.arange(1, x.shape[-1] + 1, dtype=x.dtype)
        return torch.cumsum(x + 1000.0, dim=-1) - 1000.0 * steps


def test_arbiter_is_the_model_in_float64_on_the_same_weights():
    model = rules.construct_model(Standard, [16, 8], 42, CPU, torch.float32)
    wide = rules.arbiter_model(model, rules.arbiter_dtype("fp32"), CPU)
    assert wide.linear.weight.dtype == torch.float64
    assert torch.equal(wide.linear.weight.float(), model.linear.weight)
    assert model.linear.weight.dtype == torch.float32  # the working model is untouched
    x = torch.randn(4, 65536)
    loose = LooseSum()(x)
    (exact,) = rules.run_arbiter(LooseSum(), [x], 1, torch.float64, CPU)
    assert exact.dtype == torch.float64
    assert (loose.double() - exact).abs().max() > 0.1  # the float32 reference is loose
    assert rules.arbiter_dtype("fp16") == rules.arbiter_dtype("bf16") == torch.float32


REAL = [tuple(key) for key in PINS["problems"]]


def close(a, b):
    return a == pytest.approx(b, rel=1e-9, abs=1e-9)


def same_summary(got, want):
    """Equal but for the harness's casting of integer tensors (kbench keeps them integers)."""
    assert got["trial_seeds"] == want["trial_seeds"]
    assert sorted(got["model"]) == sorted(want["model"])
    for name, w in want["model"].items():
        g = got["model"][name]
        assert g["shape"] == w["shape"], name
        assert close(g["sum"], w["sum"]) and close(g["head"], w["head"]), name
    for g_trial, w_trial in zip(got["inputs"], want["inputs"], strict=True):
        for g, w in zip(g_trial, w_trial, strict=True):
            if "value" in w:
                assert g == w
                continue
            assert g["shape"] == w["shape"]
            assert close(g["sum"], w["sum"]) and close(g["head"], w["head"])


@needs_problems
@pytest.mark.parametrize("level,problem_id", REAL)
def test_real_problem_matches_the_pinned_harness(level, problem_id):
    entry = next(e for e in PINS["problem_pins"] if e["level"] == level and
                 e["problem_id"] == problem_id)
    problem = PROBLEMS[(level, problem_id)]
    assert problem["name"] == entry["name"]
    same_summary(harness.kbench_summary(rules, problem["code"]), entry["summary"])


@needs_problems
@needs_harness
@pytest.mark.parametrize("level,problem_id", REAL)
def test_real_problem_side_by_side_with_the_harness(level, problem_id):
    h = harness.load(HARNESS_DIR)
    code = PROBLEMS[(level, problem_id)]["code"]
    theirs = harness.harness_summary(h, code)
    same_summary(harness.kbench_summary(rules, code), theirs)
    entry = next(e for e in PINS["problem_pins"] if e["level"] == level and
                 e["problem_id"] == problem_id)
    same_summary(theirs, entry["summary"])  # the pins are still the harness's


@needs_harness
def test_harness_tolerance_and_trial_seeds():
    h = harness.load(HARNESS_DIR)
    for precision in ("fp32", "fp16", "bf16"):
        assert rules.tolerance(precision) == h.get_tolerance_for_precision(precision)


def test_arbiter_copy_is_made_at_the_wider_precision_directly():
    model = nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4))
    wide = rules.arbiter_model(model, torch.float64, CPU)
    assert isinstance(wide[0].weight, nn.Parameter)
    assert wide[0].weight.dtype == wide[1].running_mean.dtype == torch.float64
    assert wide[1].num_batches_tracked.dtype == torch.int64  # integers stay integers
    assert wide[0].weight.data_ptr() != model[0].weight.data_ptr()
    assert torch.equal(wide[0].weight.float(), model[0].weight)


class Noisy(nn.Module):
    def forward(self, x):
        return nn.functional.dropout(x, 0.5, training=True)


def test_a_reference_that_draws_random_numbers_is_not_arbitrated():
    with pytest.raises(rules.DrawsRandomNumbers):
        rules.run_arbiter(Noisy(), [torch.randn(8)], 1, torch.float64, CPU)


def test_full_precision_block_restores_every_float32_setting():
    def state():
        onednn = getattr(torch.backends.mkldnn, "fp32_precision", None)
        return (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32,
                torch.get_float32_matmul_precision(), onednn)

    before = state()
    with rules.FullPrecision():
        assert torch.get_float32_matmul_precision() == "highest"
    assert state() == before
