"""What a worker holds: tensors Python can still reach (for KBENCH_CHECK_LEAKS), and the device
memory PyTorch's allocator holds (the memory plan's measurements)."""

import gc
import itertools

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


def parameter_bytes(model):
    """Bytes of a module's parameters and buffers (0 for what is not a module)."""
    if not isinstance(model, torch.nn.Module):
        return 0
    seen, total = set(), 0
    for t in itertools.chain(model.parameters(), model.buffers()):
        if t is None or id(t) in seen:
            continue
        seen.add(id(t))
        total += t.numel() * t.element_size()
    return total


def move_model(model, device):
    """A module's parameters and buffers to device, in place (nothing for what is not a module)."""
    if isinstance(model, torch.nn.Module):
        model.to(device)


def reset_peak():
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()


def reserved():
    """What PyTorch's allocator holds from the device now, its cache included."""
    return torch.cuda.memory_reserved()


def allocated():
    return torch.cuda.memory_allocated()


def peak():
    """The most PyTorch's allocator held in tensors since reset_peak()."""
    torch.cuda.synchronize()
    return torch.cuda.max_memory_allocated()


def peak_reserved():
    """The most PyTorch's allocator held from the device (its cache included) since reset_peak()."""
    return torch.cuda.max_memory_reserved()


def device_used():
    """The device's memory in use by every process (its total less what is free)."""
    free, total = torch.cuda.mem_get_info()
    return total - free


_cap = None


def cap(nbytes):
    """Caps this process's PyTorch allocations at nbytes of the device's memory."""
    global _cap
    total = torch.cuda.get_device_properties(0).total_memory
    torch.cuda.set_per_process_memory_fraction(max(min(nbytes / total, 1.0), 1e-4))
    _cap = min(nbytes, total)


def limit():
    """What this process's PyTorch allocations may reach: its cap, else the device's memory."""
    return _cap if _cap is not None else torch.cuda.get_device_properties(0).total_memory
