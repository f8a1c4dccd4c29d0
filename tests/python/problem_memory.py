"""What each problem of a KernelBench JSONL file needs on a device, from its shapes alone: one
call's tensor inputs and outputs and the model's parameters and buffers, in bytes, found on
PyTorch's meta device (no memory, no GPU). One JSON line a problem; a problem whose model cannot
run on the meta device gets its error instead. The memory plan's unit test (MemoryPlan.*) reads
these lines.

    python3 tests/python/problem_memory.py PROBLEMS.jsonl > OUT.jsonl
"""

import json
import sys
import types

import torch


def tensors(value):
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from tensors(item)


def nbytes(values):
    return sum(t.numel() * t.element_size() for t in tensors(values))


def measure(code):
    module = types.ModuleType("problem")
    exec(compile(code, "<problem>", "exec"), module.__dict__)
    with torch.device("meta"), torch.no_grad():
        init = module.get_init_inputs()
        model = module.Model(*init)
        inputs = module.get_inputs()
        parameters = sum(t.numel() * t.element_size()
                         for t in list(model.parameters()) + list(model.buffers()))
        outputs = model(*inputs)
    return {"inputs": nbytes(inputs), "outputs": nbytes(outputs), "parameters": parameters}


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
