"""The reference harness's own rules, taken from its source (ScalingIntelligence/KernelBench,
src/kernelbench/eval.py) and a summary of what they produce, for test_rules.py.

load(directory) executes the harness's functions themselves, extracted from eval.py by name (the
module's imports pull in its language-model clients, which these rules do not need).
summarise() runs a problem through a rule set, the harness's or kbench's, and returns what
the tests compare: trial seeds, each trial's inputs and each model's weights, as shapes,
float64 sums and leading values.
"""

import ast
import os
import traceback
import types
import typing

import torch
import torch.nn as nn

COMMIT = "423217d9fda91e0c2d67e4a43bf62f96f6d104f1"
FUNCTIONS = ("set_seed", "get_torch_dtype_from_string", "get_tolerance_for_precision",
             "_process_input_tensor", "get_error_name", "register_and_format_exception",
             "run_and_check_correctness")


class _Result:
    """Stands in for the harness's pydantic KernelExecResult."""

    def __init__(self, **fields):
        self.__dict__.update(fields)


def load(directory):
    """The harness's functions from <directory>/src/kernelbench/eval.py."""
    path = os.path.join(directory, "src", "kernelbench", "eval.py")
    tree = ast.parse(open(path).read(), path)
    wanted = [node for node in tree.body
              if isinstance(node, ast.FunctionDef) and node.name in FUNCTIONS]
    missing = set(FUNCTIONS) - {node.name for node in wanted}
    if missing:
        raise RuntimeError(f"{path} lacks {sorted(missing)}")
    namespace = {"torch": torch, "nn": nn, "KernelExecResult": _Result, "Union": typing.Union,
                 "Optional": typing.Optional, "traceback": traceback}
    module = ast.Module(body=wanted, type_ignores=[])
    exec(compile(module, path, "exec"), namespace)
    return types.SimpleNamespace(**{name: namespace[name] for name in FUNCTIONS})


def program(code, name="problem"):
    module = types.ModuleType(name)
    exec(compile(code, f"<{name}>", "exec"), module.__dict__)
    return module


def tensor_summary(t):
    flat = t.detach().reshape(-1)
    return {"shape": list(t.shape), "dtype": str(t.dtype).replace("torch.", ""),
            "sum": float(flat.double().sum()) if t.numel() else 0.0,
            "head": [float(v) for v in flat[:4].double()]}


def value_summary(value):
    return tensor_summary(value) if isinstance(value, torch.Tensor) else {"value": repr(value)}


def model_summary(model):
    state = model.state_dict() if isinstance(model, nn.Module) else {}
    return {name: tensor_summary(t) for name, t in sorted(state.items())}


def harness_summary(h, code, seed=42, trials=2, precision=torch.float32):
    """What the harness makes of a problem on the CPU: its trial seeds and the inputs its
    models receive (from its own run_and_check_correctness), and the reference model's
    weights (its construction sequence: eval_kernel_against_ref, lines 491-499 and 561-565 at
    COMMIT)."""
    p = program(code)
    device = torch.device("cpu")
    h.set_seed(seed)
    init = [h._process_input_tensor(x, device, "cuda", precision) for x in p.get_init_inputs()]
    with torch.no_grad():
        h.set_seed(seed)
        model = p.Model(*init)
    model = model.to(device=device, dtype=precision)

    seen = []

    class Recorder(nn.Module):
        def forward(self, *inputs):
            seen.append({"seed": torch.initial_seed(),
                         "inputs": [value_summary(v) for v in inputs]})
            return torch.zeros(1)

    synchronize = torch.cuda.synchronize
    torch.cuda.synchronize = lambda device=None: None
    try:
        h.run_and_check_correctness(Recorder(), Recorder(), p.get_inputs, {}, trials,
                                    verbose=False, seed=seed, device=device,
                                    precision=precision)
    finally:
        torch.cuda.synchronize = synchronize
    calls = seen[0::2]  # the reference's call of each trial; the candidate's is the same
    return {"trial_seeds": [c["seed"] for c in calls],
            "inputs": [c["inputs"] for c in calls],
            "model": model_summary(model)}


def kbench_summary(rules, code, seed=42, trials=2, dtype=torch.float32):
    """The same, by kbench's rules (kernelbench mode: inputs made on the CPU)."""
    p = program(code)
    device = torch.device("cpu")
    init = rules.make_init_inputs(p.get_init_inputs, seed, device, dtype)
    model = rules.construct_model(p.Model, init, seed, device, dtype)
    seeds = rules.trial_seeds(seed, trials)
    inputs = [[value_summary(v) for v in rules.make_inputs(p.get_inputs, s, device, dtype, False)]
              for s in seeds]
    return {"trial_seeds": seeds, "inputs": inputs, "model": model_summary(model)}
