"""What each problem of a KernelBench JSONL file needs on a device, from its shapes alone: one
call's tensor inputs and outputs, the model's parameters and buffers, and the most its call holds
at once beyond its inputs (its outputs and the temporaries of its operators, counted as they are
made and freed), in bytes, found on PyTorch's meta device (no memory, no GPU). One JSON line a
problem; a problem whose model cannot run on the meta device gets its error instead. The memory
plan's unit test (MemoryPlan.*) reads these lines.

    python3 tests/python/problem_memory.py PROBLEMS.jsonl > OUT.jsonl
"""

import json
import sys
import types
import weakref

import torch
from torch.utils._python_dispatch import TorchDispatchMode


def tensors(value):
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from tensors(item)


def nbytes(values):
    return sum(t.numel() * t.element_size() for t in tensors(values))


class LiveBytes(TorchDispatchMode):
    """The bytes of the tensors operators make while it is on, as they are made and freed, and
    the most at once. Views share their base's storage and count nothing."""

    def __init__(self):
        super().__init__()
        self.live = self.peak = 0
        self.seen = set()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for t in tensors(out):
            key = id(t.untyped_storage())
            if key in self.seen or t._base is not None:
                continue
            size = t.untyped_storage().nbytes()
            self.seen.add(key)
            self.live += size
            self.peak = max(self.peak, self.live)
            weakref.finalize(t.untyped_storage(), self.freed, key, size)
        return out

    def freed(self, key, size):
        self.seen.discard(key)
        self.live -= size


def measure(code):
    module = types.ModuleType("problem")
    exec(compile(code, "<problem>", "exec"), module.__dict__)
    with torch.device("meta"), torch.no_grad():
        init = module.get_init_inputs()
        model = module.Model(*init)
        inputs = module.get_inputs()
        parameters = sum(t.numel() * t.element_size()
                         for t in list(model.parameters()) + list(model.buffers()))
        with LiveBytes() as live:
            outputs = model(*inputs)
    out = nbytes(outputs)
    return {"inputs": nbytes(inputs), "outputs": out, "parameters": parameters,
            "call_peak": max(live.peak, out)}


def main(path):
    for line in open(path):
        p = json.loads(line)
        row = {"level": p["level"], "problem_id": p["problem_id"], "name": p["name"]}
        try:
            row.update(measure(p["code"]))
        except Exception as e:  # the problem's own code: anything can fail on meta tensors
            row["error"] = f"{type(e).__name__}: {e}"[:300]
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    main(sys.argv[1])
