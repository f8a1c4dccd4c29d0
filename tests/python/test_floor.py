"""Tests of kbench_worker/floor.py (FLOP and byte counts, the GPU table, the floor).

Run from the repository root: python3 -m pytest -q -p no:cacheprovider tests/python/test_floor.py
"""

import importlib.util
import json
import pathlib

import pytest
import torch

ROOT = pathlib.Path(__file__).resolve().parents[2]
FLOOR_PY = ROOT / "src" / "worker" / "python" / "kbench_worker" / "floor.py"
GPUS_JSON = ROOT / "data" / "gpus.json"


def load_floor():
    spec = importlib.util.spec_from_file_location("kbench_floor", FLOOR_PY)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


floor = load_floor()
F32 = 4


@pytest.fixture(scope="module")
def table():
    return json.loads(GPUS_JSON.read_text())


# --- FLOPs --------------------------------------------------------------------------------------


def test_linear_flops_and_bytes():
    torch.manual_seed(0)
    batch, fan_in, fan_out = 8, 32, 16
    model = torch.nn.Linear(fan_in, fan_out)
    result = floor.count(model, [torch.randn(batch, fan_in)])
    assert result["flops"] == 2 * batch * fan_in * fan_out
    assert result["flop_error"] == ""
    assert result["by_op"] == {"aten.addmm": 2 * batch * fan_in * fan_out}
    assert result["input_bytes"] == batch * fan_in * F32
    assert result["parameter_bytes"] == (fan_out * fan_in + fan_out) * F32
    assert result["output_bytes"] == batch * fan_out * F32
    assert result["bytes"] == (batch * fan_in + fan_out * fan_in + fan_out + batch * fan_out) * F32


class MatMul(torch.nn.Module):
    def forward(self, a, b):
        return torch.matmul(a, b)


def test_matmul_flops():
    m, k, n = 64, 48, 40
    result = floor.count(MatMul(), [torch.rand(m, k), torch.rand(k, n)])
    assert result["flops"] == 2 * m * k * n
    assert result["bytes"] == (m * k + k * n + m * n) * F32
    assert result["parameter_bytes"] == 0


def test_batched_matmul_flops():
    b, m, k, n = 3, 16, 8, 12
    result = floor.count(MatMul(), [torch.rand(b, m, k), torch.rand(b, k, n)])
    assert result["flops"] == 2 * b * m * k * n


def test_conv2d_flops_match_formula():
    torch.manual_seed(0)
    n, c_in, c_out, h, w, kh, kw, stride, pad = 2, 6, 10, 17, 13, 3, 5, 2, 1
    model = torch.nn.Conv2d(c_in, c_out, (kh, kw), stride=stride, padding=pad)
    x = torch.randn(n, c_in, h, w)
    result = floor.count(model, [x])
    h_out = (h + 2 * pad - kh) // stride + 1
    w_out = (w + 2 * pad - kw) // stride + 1
    assert result["flops"] == 2 * n * c_out * h_out * w_out * c_in * kh * kw
    assert result["output_bytes"] == n * c_out * h_out * w_out * F32
    assert result["parameter_bytes"] == (c_out * c_in * kh * kw + c_out) * F32


def test_grouped_conv2d_flops():
    n, c, h, groups = 1, 8, 9, 4
    model = torch.nn.Conv2d(c, c, 3, padding=1, groups=groups, bias=False)
    result = floor.count(model, [torch.randn(n, c, h, h)])
    assert result["flops"] == 2 * n * c * h * h * (c // groups) * 9


def test_elementwise_counts_no_flops_but_bytes():
    result = floor.count(torch.nn.ReLU(), [torch.rand(5, 7)])
    assert result["flops"] == 0
    assert result["flop_error"] == ""
    assert result["by_op"] == {}
    assert result["bytes"] == 2 * 5 * 7 * F32


def test_by_op_is_sorted_and_adds_up():
    class Mixed(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(2, 4, 3)
            self.fc = torch.nn.Linear(16, 8)

        def forward(self, x, a, b):
            y = self.conv(x).flatten(1)  # (1, 4 * 2 * 2)
            return self.fc(y).sum() + torch.mm(a, b).sum() + torch.bmm(a[None], b[None]).sum()

    result = floor.count(Mixed(), [torch.rand(1, 2, 4, 4), torch.rand(8, 8), torch.rand(8, 8)])
    assert set(result["by_op"]) == {"aten.convolution", "aten.addmm", "aten.mm", "aten.bmm"}
    values = list(result["by_op"].values())
    assert values == sorted(values, reverse=True)
    assert sum(values) == result["flops"]
    assert result["by_op"]["aten.mm"] == result["by_op"]["aten.bmm"] == 2 * 8**3


# --- bytes --------------------------------------------------------------------------------------


class Add(torch.nn.Module):
    def forward(self, *xs):
        out = xs[0].clone()
        for x in xs[1:]:
            out = out + x
        return out


def test_same_tensor_twice_counts_once():
    x = torch.rand(10, 10)
    result = floor.count(Add(), [x, x])
    assert result["input_bytes"] == 100 * F32


def test_views_of_one_storage_count_what_they_cover():
    x = torch.rand(10, 10)
    assert floor.count(Add(), [x, x[:5]])["input_bytes"] == 100 * F32
    assert floor.count(Add(), [x[:5], x[5:]])["input_bytes"] == 100 * F32
    assert floor.count(Add(), [x[:3], x[7:]])["input_bytes"] == 60 * F32
    assert floor.count(Add(), [x[:6], x[4:]])["input_bytes"] == 100 * F32


def test_non_contiguous_view_counts_its_elements_not_its_storage():
    x = torch.rand(10, 10)
    assert floor.count(Add(), [x[:, ::2]])["input_bytes"] == 50 * F32
    assert floor.count(Add(), [x.t()])["input_bytes"] == 100 * F32


def test_self_overlapping_view_counts_the_memory_it_spans():
    x = torch.rand(10)
    assert floor.count(Add(), [x.unfold(0, 4, 1)])["input_bytes"] == 10 * F32


def test_broadcast_view_counts_stored_elements():
    row = torch.rand(1, 10)
    assert floor.count(Add(), [row.expand(50, 10)])["input_bytes"] == 10 * F32


def test_nested_inputs_are_walked():
    a, b, c = torch.rand(3), torch.rand(4), torch.rand(5)

    class Takes(torch.nn.Module):
        def forward(self, pair, mapping):
            return pair[0].sum() + pair[1].sum() + mapping["c"].sum()

    result = floor.count(Takes(), [(a, b), {"c": c, "n": 3}])
    assert result["input_bytes"] == 12 * F32
    assert result["output_bytes"] == F32


def test_parameter_passed_as_input_counts_once():
    model = torch.nn.Linear(6, 6, bias=False)

    class UsesWeight(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = model

        def forward(self, w):
            return self.inner(w)

    result = floor.count(UsesWeight(), [model.weight])
    assert result["input_bytes"] == 36 * F32
    assert result["parameter_bytes"] == 0
    assert result["bytes"] == 2 * 36 * F32


def test_tied_parameters_and_buffers():
    class Tied(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = torch.nn.Linear(4, 4, bias=False)
            self.b = torch.nn.Linear(4, 4, bias=False)
            self.b.weight = self.a.weight
            self.register_buffer("scale", torch.ones(4))
            self.register_buffer("scale_view", self.scale[:2])

        def forward(self, x):
            return self.b(self.a(x)) * self.scale

    result = floor.count(Tied(), [torch.rand(2, 4)])
    assert result["parameter_bytes"] == (16 + 4) * F32


def test_output_aliasing_an_input_adds_nothing():
    class View(torch.nn.Module):
        def forward(self, x):
            return x.view(-1)

    result = floor.count(View(), [torch.rand(4, 4)])
    assert result["output_bytes"] == 0
    assert result["bytes"] == 16 * F32


def test_outputs_in_tuples_and_half_precision():
    class Two(torch.nn.Module):
        def forward(self, x):
            return x * 2, (x + 1).to(torch.float16)

    result = floor.count(Two(), [torch.rand(8)])
    assert result["output_bytes"] == 8 * F32 + 8 * 2


# --- RNG and errors -----------------------------------------------------------------------------


def test_rng_state_is_unchanged():
    class Noisy(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.drop = torch.nn.Dropout(0.5)

        def forward(self, x):
            return self.drop(x) + torch.rand_like(x) + torch.randn(3).sum()

    torch.manual_seed(123)
    before = torch.random.get_rng_state().clone()
    expected = torch.rand(4)
    torch.random.set_rng_state(before)
    floor.count(Noisy().train(), [torch.ones(100)])
    assert torch.equal(torch.random.get_rng_state(), before)
    assert torch.equal(torch.rand(4), expected)


def test_rng_state_is_restored_after_an_error():
    class Fails(torch.nn.Module):
        def forward(self, x):
            torch.rand(10)
            raise ValueError("boom")

    before = torch.random.get_rng_state().clone()
    floor.count(Fails(), [torch.ones(3)])
    assert torch.equal(torch.random.get_rng_state(), before)


def test_model_raising_gives_no_flops_but_bytes():
    class Broken(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(5, 3)

        def forward(self, x):
            self.fc(x)
            raise RuntimeError("shape mismatch somewhere\nsecond line")

    result = floor.count(Broken(), [torch.rand(2, 5)])
    assert result["flops"] is None
    assert result["flop_error"] == "RuntimeError: shape mismatch somewhere"
    assert "\n" not in result["flop_error"]
    assert result["by_op"] == {}
    assert result["input_bytes"] == 10 * F32
    assert result["parameter_bytes"] == (15 + 3) * F32
    assert result["output_bytes"] == 0
    assert result["bytes"] == (10 + 18) * F32


def test_no_gradients_are_recorded():
    model = torch.nn.Linear(3, 3)
    x = torch.rand(2, 3, requires_grad=True)
    floor.count(model, [x])
    assert model.weight.grad is None and x.grad is None


# --- table and lookup ---------------------------------------------------------------------------
# kbench matches device names against data/gpus.json in C++ (integrity/floor.cpp: the first
# entry, in order, one of whose "match" strings the name contains); this is the same rule, to
# check the table's data against.


def lookup(table, device_name):
    gpus = table.get("gpus", []) if isinstance(table, dict) else list(table)
    for entry in gpus:
        if any(m in device_name for m in entry.get("match", [])):
            return entry
    return None


EXPECTED = {
    "NVIDIA H100 80GB HBM3": "NVIDIA H100 SXM5 80GB",
    "NVIDIA H100 PCIe": "NVIDIA H100 PCIe 80GB",
    "NVIDIA H100 NVL": "NVIDIA H100 NVL 94GB",
    "NVIDIA H200": "NVIDIA H200 SXM 141GB",
    "NVIDIA H200 NVL": "NVIDIA H200 NVL 141GB",
    "NVIDIA GH200 480GB": "NVIDIA GH200 Grace Hopper Superchip (GPU)",
    "NVIDIA A100-SXM4-80GB": "NVIDIA A100 SXM4 80GB",
    "NVIDIA A100-SXM4-40GB": "NVIDIA A100 40GB (SXM4 or PCIe)",
    "NVIDIA A100-PCIE-40GB": "NVIDIA A100 40GB (SXM4 or PCIe)",
    "NVIDIA A100 80GB PCIe": "NVIDIA A100 80GB PCIe",
    "NVIDIA L40S": "NVIDIA L40S",
    "NVIDIA L40": "NVIDIA L40",
    "NVIDIA GeForce RTX 4090": "NVIDIA GeForce RTX 4090",
}


@pytest.mark.parametrize("device_name", sorted(EXPECTED))
def test_lookup_picks_the_right_entry(table, device_name):
    entry = lookup(table, device_name)
    assert entry is not None and entry["name"] == EXPECTED[device_name]


def test_lookup_unknown_device(table):
    assert lookup(table, "NVIDIA GeForce RTX 3090") is None
    assert lookup(table, "nvidia h100 pcie") is None  # matching is case-sensitive
    assert lookup(table, "") is None


def test_lookup_takes_the_list_or_the_table():
    gpus = [{"match": ["X1"], "name": "first"}, {"match": ["X"], "name": "second"}]
    assert lookup(gpus, "Vendor X1")["name"] == "first"
    assert lookup({"gpus": gpus}, "Vendor X2")["name"] == "second"


def test_no_entry_is_shadowed_by_an_earlier_one(table):
    for entry in table["gpus"]:
        for match in entry["match"]:
            assert lookup(table, f"NVIDIA {match}") is entry, match


def test_table_entries_are_complete(table):
    assert isinstance(table["_schema"], str) and table["_schema"]
    for entry in table["gpus"]:
        assert entry["match"] and all(isinstance(m, str) and m for m in entry["match"])
        assert entry["name"] and entry["source"].startswith("https://")
        bandwidth = entry["memory_bandwidth_GBps"]
        assert bandwidth["datasheet"] > 0 and "measured" in bandwidth
        for kind in ("fp32", "tf32", "fp16", "bf16", "fp64"):
            assert entry[f"{kind}_tflops"]["datasheet"] > 0, (entry["name"], kind)
        # dense tensor-core rates: fp16 above tf32, and no sparse figure kept by mistake
        assert entry["fp16_tflops"]["datasheet"] > entry["tf32_tflops"]["datasheet"]
        for kind in ("tf32", "fp16", "bf16"):
            sparse = entry[f"{kind}_tflops"].get("datasheet_sparse")
            if sparse is not None:
                assert entry[f"{kind}_tflops"]["datasheet"] <= sparse / 2 * 1.01
        assert isinstance(entry["l2_bytes"], int) and entry["l2_bytes"] > 0


# --- the floor ----------------------------------------------------------------------------------

PEAKS = {
    "memory_bandwidth_GBps": {"datasheet": 1000, "measured": None},
    "fp32_tflops": {"datasheet": 50},
    "tf32_tflops": {"datasheet": 400},
    "fp16_tflops": {"datasheet": 800},
    "bf16_tflops": {"datasheet": 800},
}


def test_warm_does_the_counters_imports():
    """The judge warms the flop counter when it starts: afterwards a count imports nothing."""
    import subprocess
    import sys

    program = f"""
import importlib.util, sys, torch
spec = importlib.util.spec_from_file_location("kbench_floor", {str(FLOOR_PY)!r})
floor = importlib.util.module_from_spec(spec)
spec.loader.exec_module(floor)
floor.warm()
before = set(sys.modules)
floor.count(torch.nn.Linear(4, 4), [torch.randn(2, 4)])
print(sorted(set(sys.modules) - before))
"""
    out = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
