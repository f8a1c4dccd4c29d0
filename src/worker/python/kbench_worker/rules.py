"""KernelBench's rules, as kbench applies them in the judge and in every sandbox.

These follow the reference harness (ScalingIntelligence/KernelBench, src/kernelbench/eval.py;
tests/python/test_rules.py pins them against commit 423217d9fda91e0c2d67e4a43bf62f96f6d104f1):

- seeding: torch.manual_seed(seed), which seeds the CPU and every CUDA generator;
- trial seeds: torch.manual_seed(seed), then one torch.randint(0, 2**32 - 1, (1,)) per trial;
- inputs: get_inputs() under the trial's seed, each tensor cast to the precision and moved to
  the device;
- models: get_init_inputs() under the seed, its tensors cast and moved; then, under the seed
  again and without gradients, cls(*init_inputs) constructed on the CPU (parameters drawn from
  the CPU generator, whatever their constructor), then moved to the device and cast;
- tolerance: atol = rtol = 1e-4 for fp32, 1e-2 for fp16 and bf16.

Deliberate departures, each listed in docs/semantics.md ("Modes"):

- only floating-point tensors are cast to the precision (the harness casts integer tensors too,
  which turns index and label inputs into floats);
- in strict mode inputs are made with the device as PyTorch's default device (the harness makes
  them on the CPU and copies them): much faster for large inputs, and strict mode's seeds are
  secret anyway, so no verdict can depend on which generator drew them;
- the precision policy below.

Nothing here is trusted in a sandbox: a candidate can change anything in its own process, and
the judge checks what it returns.
"""

import contextlib
import copy

import torch

DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}

# KernelBench's tolerance by precision (atol = rtol).
TOLERANCE = {"fp32": 1e-4, "fp16": 1e-2, "bf16": 1e-2}
# With TF32 allowed, fp32 matmuls and convolutions keep a 10-bit mantissa, as fp16 does: the
# tolerance fp16 gets.
TF32_TOLERANCE = 1e-2

TF32_POLICIES = ("off", "on", "default")


def tolerance(precision, tf32="default"):
    """atol = rtol for a precision under a TF32 policy."""
    if precision == "fp32" and tf32 == "on":
        return TF32_TOLERANCE
    return TOLERANCE[precision]


def set_seed(seed):
    torch.manual_seed(seed)


def trial_seeds(seed, trials):
    set_seed(seed)
    return [int(torch.randint(0, 2**32 - 1, (1,)).item()) for _ in range(trials)]


def process_input(value, device, dtype):
    """A value of get_inputs() or get_init_inputs() as models receive it."""
    if not isinstance(value, torch.Tensor):
        return value
    if value.is_floating_point():
        value = value.to(dtype=dtype)
    return value.to(device=device)


def make_inputs(get_inputs, seed, device, dtype, on_device):
    """get_inputs() under seed; on_device: with the device as PyTorch's default device."""
    set_seed(seed)
    if on_device:
        with torch.device(device):
            raw = get_inputs()
    else:
        raw = get_inputs()
    return [process_input(v, device, dtype) for v in raw]


def make_init_inputs(get_init_inputs, seed, device, dtype):
    set_seed(seed)
    return [process_input(v, device, dtype) for v in get_init_inputs()]


def construct_model(cls, init_inputs, seed, device, dtype):
    """cls(*init_inputs) as the harness constructs Model and ModelNew: on the CPU (whatever
    default device the caller has set), under the seed, without gradients; then moved."""
    with torch.no_grad(), torch.device("cpu"):
        set_seed(seed)
        model = cls(*init_inputs)
    if isinstance(model, torch.nn.Module):
        model = model.to(device=device, dtype=dtype)
    return model


def apply_precision(policy):
    """Sets PyTorch's float32 precision flags for a TF32 policy.

    off: TF32 off for cuBLAS and cuDNN (convolutions and RNNs), float32 matmul precision
         "highest", no reduced-precision reductions in fp16 and bf16 matmuls, and oneDNN's
         float32 at full precision on the CPU;
    on: TF32 for cuBLAS and cuDNN, matmul precision "high";
    default: PyTorch's defaults, untouched (what the reference harness runs with).
    """
    if policy not in TF32_POLICIES:
        raise ValueError(f"unknown TF32 policy {policy!r}; use one of {TF32_POLICIES}")
    if policy == "default":
        return
    allow = policy == "on"
    torch.backends.cuda.matmul.allow_tf32 = allow
    torch.backends.cudnn.allow_tf32 = allow
    torch.set_float32_matmul_precision("high" if allow else "highest")
    if not allow:
        torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False
        torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = False
        mkldnn = getattr(torch.backends, "mkldnn", None)
        if mkldnn is not None and hasattr(mkldnn, "fp32_precision"):
            mkldnn.fp32_precision = "ieee"


class FullPrecision:
    """Within the block, float32 runs at full precision (TF32 and reduced reductions off)."""

    _NAMES = (
        (torch.backends.cuda.matmul, "allow_tf32"),
        (torch.backends.cudnn, "allow_tf32"),
        (torch.backends.cuda.matmul, "allow_fp16_reduced_precision_reduction"),
        (torch.backends.cuda.matmul, "allow_bf16_reduced_precision_reduction"),
    )
    # oneDNN's float32 precision (newer PyTorch), which the matmul precision setter also moves.
    _ONEDNN = ("mkldnn", "mkldnn.matmul", "mkldnn.conv", "mkldnn.rnn")

    @staticmethod
    def _onednn_owners():
        owners = []
        for path in FullPrecision._ONEDNN:
            owner = torch.backends
            for part in path.split("."):
                owner = getattr(owner, part, None)
            if owner is not None and hasattr(owner, "fp32_precision"):
                owners.append(owner)
        return owners

    def __enter__(self):
        self._saved = [getattr(owner, name) for owner, name in self._NAMES]
        self._matmul = torch.get_float32_matmul_precision()
        self._onednn = [(owner, owner.fp32_precision) for owner in self._onednn_owners()]
        apply_precision("off")
        return self

    def __exit__(self, *exc):
        for (owner, name), value in zip(self._NAMES, self._saved):
            setattr(owner, name, value)
        torch.set_float32_matmul_precision(self._matmul)
        for owner, value in self._onednn:
            owner.fp32_precision = value
        return False


def arbiter_dtype(precision):
    """float64 arbitrates fp32; fp32 at full precision arbitrates fp16 and bf16."""
    return torch.float64 if precision == "fp32" else torch.float32


def arbiter_model(model, dtype, device):
    """A copy of model in dtype on device: the same (rounded) weights at a wider precision.

    Parameters and buffers are copied straight to the device and dtype, so that no second copy
    at the working precision is made where the model lives (on a full GPU, the CPU fallback
    would need GPU memory for it)."""
    memo = {}
    if isinstance(model, torch.nn.Module):
        for t in list(model.parameters()) + list(model.buffers()):
            wide = t.detach().to(device=device,
                                 dtype=dtype if t.is_floating_point() else None, copy=True)
            memo[id(t)] = (torch.nn.Parameter(wide, requires_grad=t.requires_grad)
                           if isinstance(t, torch.nn.Parameter) else wide)
    arbiter = copy.deepcopy(model, memo)
    if isinstance(arbiter, torch.nn.Module):
        arbiter = arbiter.to(device=device, dtype=dtype)
    return arbiter


def widen(value, dtype, device):
    """An input for the arbiter: floating tensors cast to dtype, every tensor on device."""
    if not isinstance(value, torch.Tensor):
        return value
    if value.is_floating_point():
        return value.to(device=device, dtype=dtype, copy=True)
    return value.to(device=device, copy=True)


class DrawsRandomNumbers(RuntimeError):
    """The reference's forward consumed random numbers: at another precision it draws others."""


def _generator_states():
    states = [torch.random.get_rng_state()]
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        states += torch.cuda.get_rng_state_all()
    return states


def run_arbiter(model, inputs, seed, dtype, device):
    """The arbiter's outputs for inputs (a list), as a list of tensors, at full precision.

    Raises DrawsRandomNumbers when the forward consumes random numbers (dropout in training mode,
    noise): a run at another precision draws other numbers, so it is no arbiter."""
    args = [widen(v, dtype, device) for v in inputs]
    full = FullPrecision() if dtype == torch.float32 else contextlib.nullcontext()
    with torch.no_grad(), full:
        set_seed(seed)
        before = _generator_states()
        out = model(*args)
        if any(not torch.equal(a, b) for a, b in zip(before, _generator_states(), strict=True)):
            raise DrawsRandomNumbers("the reference draws random numbers in forward, and a run "
                                     "at another precision draws other ones")
    items = [out] if isinstance(out, torch.Tensor) else list(out)
    for item in items:
        if not isinstance(item, torch.Tensor):
            raise TypeError(f"the reference returned a {type(item).__name__} in float64")
    return items
