"""Whether a reference's time depends on what the GPU does between its calls: one process times
each problem's reference under several cadences, interleaved in rounds, and prints each
cadence's median against the judge's (flush, synchronise, time the call).

    python3 bench/timing/cadence.py PROBLEMS.jsonl [L/P ...]

Cadences: judge (as the judge times a baseline), gap (a 200 us pause after the flush, as a
request's round trip leaves the GPU idle), fresh (new random inputs written into the same
buffers before the flush, as every timed request gets), request (fresh, then the pause, then the
outputs copied away after the call: the candidate's whole request).
"""

import json
import statistics
import sys
import time

import torch

DEFAULT = ["1/1", "1/19", "2/12", "3/1"]


def busy_wait(us):
    end = time.perf_counter() + us / 1e6
    while time.perf_counter() < end:
        pass


def main(path, wanted):
    rows = {}
    for line in open(path):
        p = json.loads(line)
        rows[f"{p['level']}/{p['problem_id']}"] = p
    flush = torch.empty(2 * 60 * 1024 * 1024, dtype=torch.uint8, device="cuda")
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}")
    for key in wanted:
        scope = {"__name__": "reference"}
        exec(compile(rows[key]["code"], key, "exec"), scope)
        torch.manual_seed(42)
        model = scope["Model"](*scope["get_init_inputs"]()).cuda()
        inputs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in scope["get_inputs"]()]
        sink = [None]

        def timed(fresh, gap, copy_out):
            if fresh:
                for x in inputs:
                    if isinstance(x, torch.Tensor) and x.is_floating_point():
                        x.normal_()
            flush.fill_(1)
            torch.cuda.synchronize()
            if gap:
                busy_wait(gap)
            start.record()
            with torch.no_grad():
                out = model(*inputs)
            stop.record()
            torch.cuda.synchronize()
            if copy_out:
                sink[0] = out.clone()
                torch.cuda.synchronize()
            return start.elapsed_time(stop) * 1000

        cadences = {"judge": (False, 0, False), "gap": (False, 200, False),
                    "fresh": (True, 0, False), "request": (True, 200, True)}
        for _ in range(20):
            for c in cadences.values():
                timed(*c)
        samples = {name: [] for name in cadences}
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and len(samples["judge"]) < 2000:
            for name, c in cadences.items():
                for _ in range(5):
                    samples[name].append(timed(*c))
        base = statistics.median(samples["judge"])
        line = f"{key}: judge {base:.1f} us (n={len(samples['judge'])})"
        for name in cadences:
            if name != "judge":
                m = statistics.median(samples[name])
                line += f"; {name} {m:.1f} us ({base / m:.3f}x)"
        print(line, flush=True)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    main(sys.argv[1], sys.argv[2:] or DEFAULT)
