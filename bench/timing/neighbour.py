"""Whether another process's CUDA context slows a reference's timing: this process times level 1
problem 1's reference (flush, synchronise, time the call) while a second process is absent, holds
an idle CUDA context, or holds one with CUPTI's kernel activity records on (torch.profiler).

    python3 bench/timing/neighbour.py PROBLEMS.jsonl
"""

import json
import statistics
import subprocess
import sys
import time

import torch

NEIGHBOUR = r"""
import sys, time, torch
torch.ones(1, device="cuda")
if sys.argv[1] == "cupti":
    from torch.profiler import profile, ProfilerActivity
    with profile(activities=[ProfilerActivity.CUDA]):
        torch.ones(1, device="cuda") + 1
        print("ready", flush=True)
        time.sleep(60)
else:
    print("ready", flush=True)
    time.sleep(60)
"""


def main(path):
    code = next(json.loads(line)["code"] for line in open(path)
                if json.loads(line)["level"] == 1 and json.loads(line)["problem_id"] == 1)
    scope = {"__name__": "reference"}
    exec(compile(code, "1/1", "exec"), scope)
    torch.manual_seed(42)
    model = scope["Model"](*scope["get_init_inputs"]()).cuda()
    inputs = [x.cuda() for x in scope["get_inputs"]()]
    flush = torch.empty(120 * 1024 * 1024, dtype=torch.uint8, device="cuda")
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)

    def sample():
        flush.fill_(1)
        torch.cuda.synchronize()
        start.record()
        with torch.no_grad():
            model(*inputs)
        stop.record()
        torch.cuda.synchronize()
        return start.elapsed_time(stop) * 1000

    for _ in range(50):
        sample()
    for state in ("alone", "idle", "cupti", "alone", "cupti", "idle"):
        other = None
        if state != "alone":
            other = subprocess.Popen([sys.executable, "-c", NEIGHBOUR, state],
                                     stdout=subprocess.PIPE, text=True)
            other.stdout.readline()
        xs = [sample() for _ in range(1000)]
        if other:
            other.kill()
            other.wait()
        print(f"{state:6} median {statistics.median(xs):.1f} us, p10 "
              f"{sorted(xs)[100]:.1f}, p90 {sorted(xs)[900]:.1f}", flush=True)
        time.sleep(1)


if __name__ == "__main__":
    main(sys.argv[1])
