"""The physical floor on a problem's run time: the speed of light on a device.

floor = max(FLOPs / peak compute, bytes / memory bandwidth), where

- FLOPs are what PyTorch's flop counter (torch.utils.flop_counter.FlopCounterMode) counts for
  one call of the reference model; ops it has no formula for count 0, so the FLOP floor is a
  lower bound;
- bytes are the bytes a kernel must at least read and write once: every tensor among the inputs,
  the model's parameters and buffers, and every tensor among the outputs, each storage counted
  once (see count);
- the peaks come from a table of GPUs (data/gpus.json), which kbench itself reads: the floor and
  the decision on it are kbench's (src/integrity/floor.cpp), with what count() reports.

count(model, inputs) measures one call of a problem.
"""

import math

import torch
from torch.utils.flop_counter import FlopCounterMode

TOP_OPS = 8



# --- walking values ---------------------------------------------------------------------------


def tensors_in(value):
    """Every tensor in value, walking lists, tuples (named or not), sets and dicts, in order."""
    found, seen = [], set()

    def walk(v):
        if isinstance(v, torch.Tensor):
            found.append(v)
            return
        if isinstance(v, (list, tuple, set, frozenset, dict)):
            if id(v) in seen:
                return
            seen.add(id(v))
            for item in (v.values() if isinstance(v, dict) else v):
                walk(item)

    walk(value)
    return found


def model_tensors(model):
    """The model's parameters and buffers (each once), or [] when model is not a Module."""
    if not isinstance(model, torch.nn.Module):
        return []
    return list(model.parameters()) + list(model.buffers())


# --- bytes --------------------------------------------------------------------------------------


def element_count(t):
    """The number of distinct memory elements a tensor's view covers.

    A broadcast dimension (stride 0) holds one element however long it is, so an expanded
    tensor counts what is stored, not what it shows.
    """
    if t.numel() == 0:
        return 0
    return math.prod(size for size, stride in zip(t.shape, t.stride()) if stride != 0)


def view_extent(t):
    """(first byte, one past the last byte) that a tensor's view spans in memory."""
    start = t.data_ptr()
    if t.numel() == 0:
        return start, start
    last = sum((size - 1) * stride for size, stride in zip(t.shape, t.stride()))
    return start, start + (last + 1) * t.element_size()


def union_length(intervals):
    """Total length of a union of half-open intervals."""
    total, end = 0, None
    for lo, hi in sorted(intervals):
        if end is None or lo >= end:
            total += hi - lo
            end = hi
        elif hi > end:
            total += hi - end
            end = hi
    return total


def stored_parts(t):
    """The strided tensors that hold a tensor's data: itself, or a sparse tensor's indices and
    values. A layout it does not know holds nothing countable ([]), which keeps bytes a lower
    bound."""
    if t.layout == torch.strided:
        return [t]
    if t.layout == torch.sparse_coo:
        return [t._indices(), t._values()]
    if t.layout in (torch.sparse_csr, torch.sparse_bsr):
        return [t.crow_indices(), t.col_indices(), t.values()]
    if t.layout in (torch.sparse_csc, torch.sparse_bsc):
        return [t.ccol_indices(), t.row_indices(), t.values()]
    return []


def storage_key(t):
    """What identifies a tensor's storage: tensors with the same key share memory."""
    try:
        storage = t.untyped_storage()
        pointer = storage.data_ptr()
    except (RuntimeError, NotImplementedError, TypeError):
        return ("own", id(t))
    if t.device.type == "meta" or pointer == 0:
        return ("own", id(t))
    return (t.device.type, t.device.index, pointer)


def storage_size(t):
    """The bytes of a tensor's whole storage, or None when it has none to ask."""
    try:
        return t.untyped_storage().nbytes()
    except (RuntimeError, NotImplementedError, TypeError):
        return None


def footprint(views):
    """Bytes that a set of views of one storage covers, each byte once.

    Exact for dense views (a contiguous tensor, a slice of rows) and for a single view without
    internal overlap; otherwise the smallest of three upper bounds: the sum of the views'
    elements, the union of their spans and the storage's size (a view that overlaps itself,
    such as unfold's, counts no more than the memory it spans).
    """
    elements = sum(element_count(t) * t.element_size() for t in views)
    spans = union_length(view_extent(t) for t in views)
    bounds = [elements, spans]
    size = storage_size(views[0])
    if size is not None:
        bounds.append(size)
    return min(bounds)


class Ledger:
    """Counts bytes across groups of tensors, each byte of memory once over all groups."""

    def __init__(self):
        self.views = {}  # storage key -> {view key: tensor}

    def add(self, tensors):
        """Records tensors; returns the bytes they add to what was recorded before."""
        added = 0
        parts = [p for t in tensors for p in stored_parts(t)]
        for key, views in self.group(parts).items():
            known = self.views.setdefault(key, {})
            before = footprint(list(known.values())) if known else 0
            known.update(views)
            added += footprint(list(known.values())) - before
        return added

    @staticmethod
    def group(tensors):
        groups = {}
        for t in tensors:
            view = (t.data_ptr(), tuple(t.shape), tuple(t.stride()), t.element_size())
            groups.setdefault(storage_key(t), {})[view] = t
        return groups


# --- counting -----------------------------------------------------------------------------------


class RngGuard:
    """Restores the CPU generator, and the CUDA generators when CUDA is initialized, on exit."""

    def __enter__(self):
        self.cpu = torch.random.get_rng_state()
        self.cuda = torch.cuda.get_rng_state_all() if torch.cuda.is_initialized() else None
        return self

    def __exit__(self, *exc):
        torch.random.set_rng_state(self.cpu)
        if self.cuda is not None:
            torch.cuda.set_rng_state_all(self.cuda)
        return False


def op_name(op):
    """'aten.mm' for the counter's key of aten.mm."""
    return str(op)


def top_ops(counter):
    """The counter's largest FLOP counts by op, at most TOP_OPS of them, largest first."""
    counts = counter.get_flop_counts().get("Global", {})
    ranked = sorted(((op_name(op), int(n)) for op, n in counts.items()), key=lambda kv: -kv[1])
    return dict(ranked[:TOP_OPS])


def one_line(error):
    """'TypeName: first line of the message'."""
    lines = str(error).strip().splitlines()
    return f"{type(error).__name__}: {lines[0]}" if lines else type(error).__name__


def run_counted(model, inputs):
    """Calls model(*inputs) once without gradients under the flop counter.

    Returns (outputs, flops, by_op, error); on an exception outputs and flops are None and error
    says why. The caller's RNG state is the same afterwards.
    """
    counter = FlopCounterMode(display=False)
    try:
        with RngGuard(), torch.no_grad(), counter:
            outputs = model(*inputs)
    except Exception as error:  # noqa: BLE001  any failure of the reference is reported
        return None, None, {}, one_line(error)
    return outputs, int(counter.get_total_flops()), top_ops(counter), ""


def warm():
    """Counts one small call on the CPU, so that the flop counter's imports are done."""
    run_counted(torch.nn.ReLU(), [torch.zeros(2)])


def count(model, inputs):
    """FLOPs and bytes of one call model(*inputs).

    Returns {"flops": int or None, "flop_error": "" or one line, "by_op": {op: flops} (top 8),
    "bytes", "input_bytes", "parameter_bytes", "output_bytes"}.

    Bytes are numel x element size of every tensor among the inputs, the model's parameters and
    buffers, and the outputs, with memory shared between tensors counted once: two views of one
    storage count the bytes they cover, a parameter passed as an input counts as an input, an
    output that is (a view of) an input or a parameter adds nothing. The parts add up to bytes.
    A broadcast (stride 0) view counts the elements stored, not the elements shown.

    An op the flop counter has no formula for counts 0. If the call raises, flops is None,
    flop_error says why, and the input and parameter bytes are still counted (outputs: 0).
    The call runs without gradients and leaves the caller's RNG state as it was; it may still
    change the inputs or buffers in place if the model does.
    """
    inputs = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
    ledger = Ledger()
    input_bytes = ledger.add(tensors_in(inputs))
    parameter_bytes = ledger.add(model_tensors(model))
    outputs, flops, by_op, error = run_counted(model, inputs)
    output_bytes = ledger.add(tensors_in(outputs)) if error == "" else 0
    return {
        "flops": flops,
        "flop_error": error,
        "by_op": by_op,
        "bytes": input_bytes + parameter_bytes + output_bytes,
        "input_bytes": input_bytes,
        "parameter_bytes": parameter_bytes,
        "output_bytes": output_bytes,
    }
