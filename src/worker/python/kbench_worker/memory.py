"""What the judge holds: tensors Python can still reach (for KBENCH_CHECK_LEAKS)."""

import gc

import torch


def live_tensors():
    """(count, bytes) of the tensors among the objects Python's collector tracks, without
    collecting: what is alive, cycles waiting for the collector included."""
    count = size = 0
    for obj in gc.get_objects():
        if isinstance(obj, torch.Tensor):
            count += 1
            size += obj.numel() * obj.element_size()
    return count, size
