"""The device's memory bandwidth as a copy sees it: the `measured` figure of data/gpus.json.

Copies a buffer of 4 GiB (or an eighth of the device's memory, if smaller) into another, 20
times after 3 warm-ups, timed with CUDA events; bandwidth = bytes read + bytes written over the
median time. Prints one JSON object.
"""

import json
import statistics

import torch


def main():
    props = torch.cuda.get_device_properties(0)
    nbytes = min(4 << 30, props.total_memory // 8) // 4 * 4
    src = torch.empty(nbytes // 4, dtype=torch.float32, device="cuda").uniform_()
    dst = torch.empty_like(src)
    for _ in range(3):
        dst.copy_(src)
    times = []
    for _ in range(20):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        dst.copy_(src)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 1e3)
    median = statistics.median(times)
    print(json.dumps({
        "device": torch.cuda.get_device_name(0),
        "bytes_moved": 2 * nbytes,
        "median_s": median,
        "best_s": min(times),
        "bandwidth_GBps_median": round(2 * nbytes / median / 1e9, 1),
        "bandwidth_GBps_best": round(2 * nbytes / min(times) / 1e9, 1),
        "torch": torch.__version__,
    }))


if __name__ == "__main__":
    main()
