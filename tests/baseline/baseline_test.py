"""kbench baseline on the CPU, end to end: references timed in a judge of their own, eager and
through torch.compile, kept per problem and setting, written as KernelBench's results/timing
files, and scored against (kbench score --baseline compile).

    python3 tests/baseline/baseline_test.py KBENCH PYTHON WORK_DIR

- two problems of the built-in suite's level 1 eagerly, the first also compiled (mode default);
- KernelBench's file shape (level, file name, mean/std/min/max/num_trials/hardware/device) with
  numbers that agree with the kept entries;
- a second command keeps them (nothing timed again) and --force times them again;
- a CPU eval of the two problems' suite candidates, then score --baseline compile: the compiled
  problem scored against its kept baseline, the other listed without one; a mode nobody timed is
  a usage error (exit 2) that says what to run.
"""

import glob
import json
import os
import shutil
import subprocess
import sys
import time


def run(args, env, ok=(0,)):
    done = subprocess.run(args, capture_output=True, text=True, env=env)
    if done.returncode not in ok:
        raise AssertionError(f"{args} exited {done.returncode}:\n{done.stdout}\n{done.stderr}")
    return done


def check(condition, message):
    if not condition:
        raise AssertionError(message)


def main():
    kbench, python, work = sys.argv[1:4]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    env = dict(os.environ, KBENCH_CACHE=os.path.join(work, "cache"), KBENCH_PYTHON=python)
    out = os.path.join(work, "timing")
    base = [kbench, "baseline", "--device", "cpu", "--level", "1", "--max-seconds", "1", "-q"]

    # Eager for problems 1-2 by two judges sharing the device, then compiled for problem 1
    # (eager kept).
    loud = [a for a in base if a != "-q"]
    first = run(loud + ["--problems", "1-2", "--jobs", "2", "--json", "-o", out], env)
    check("2 judges share the device" in first.stderr, first.stderr)
    rows = [json.loads(line) for line in first.stdout.splitlines()]
    check(len(rows) == 2 and all(r["mode"] == "eager" and not r["cached"] for r in rows), rows)
    check(sorted(r["id"] for r in rows) == [1, 2], rows)
    compiled = run(base + ["--problems", "1", "--compile", "--json", "-o", out], env)
    rows += [json.loads(line) for line in compiled.stdout.splitlines()]
    by = {(r["id"], r["mode"], r["cached"]): r for r in rows}
    check((1, "eager", True) in by and (1, "default", False) in by, sorted(by))
    check(by[(1, "default", False)]["compile_s"] > 0, "compiling took no time")
    check(by[(1, "eager", True)]["mean_ms"] == by[(1, "eager", False)]["mean_ms"],
          "the kept eager entry is not the one timed first")

    # KernelBench's files.
    eager = json.load(open(os.path.join(out, "baseline_time_torch.json")))
    check(sorted(eager["level1"]) == ["1_ReLU.py", "2_Softmax.py"], eager)
    entry = eager["level1"]["1_ReLU.py"]
    check(set(entry) == {"mean", "std", "min", "max", "num_trials", "hardware", "device"}, entry)
    check(entry["min"] <= entry["mean"] <= entry["max"] and entry["num_trials"] >= 10, entry)
    check(abs(entry["mean"] - by[(1, "eager", False)]["mean_ms"]) < 1e-12, entry)
    check(entry["device"] == "cpu", entry)
    inductor = json.load(open(os.path.join(out, "baseline_time_torch_compile_inductor_default.json")))
    check(list(inductor["level1"]) == ["1_ReLU.py"], inductor)

    # Kept: nothing timed again, unless forced.
    start = time.monotonic()
    again = run(base + ["--problems", "1-2"], env)
    check("0 timed now, 2 kept" in again.stdout, again.stdout)
    check(time.monotonic() - start < 60, "keeping took as long as timing")
    forced = run(base + ["--problems", "2", "--force"], env)
    check("1 timed now, 0 kept" in forced.stdout, forced.stdout)

    # A kept entry's setting holds what the reference's own timing depends on, not what only a
    # candidate's rounds use (--stop-below): adding such an option to kbench, or changing its
    # default, must not send every kept baseline to be timed again.
    kept = [json.load(open(f)) for f in glob.glob(os.path.join(work, "cache", "baselines", "*.json"))]
    check(len(kept) == 3, len(kept))
    for e in kept:
        check("stop_below" not in e["setting"]["timing"], e["setting"]["timing"])
        check("max_seconds" in e["setting"]["timing"], e["setting"]["timing"])

    # Scored against: the suite's CPU candidates for problems 1-2.
    runs = os.path.join(work, "runs")
    run([kbench, "eval", "--device", "cpu", "--python", python, "--runs-dir", runs, "--run",
         "r", "--level", "1", "--problems", "1-2", "--max-seconds", "1", "-q"], env, ok=(0, 1))
    score = run([kbench, "score", "--runs-dir", runs, "--run", "r", "--baseline", "compile",
                 "--format", "json"], env, ok=(0, 1))
    s = json.loads(score.stdout)
    check("torch.compile (default)" in s["baseline"] and "1 problem" in s["baseline"], s)
    level1 = next(level for level in s["levels"] if level["level"] == "1")
    check(level1["without_baseline"] == ["2_Softmax"], level1)
    # The report takes the same baseline: its label, and the problem without one listed.
    page = os.path.join(work, "report.html")
    run([kbench, "report", "--runs-dir", runs, "--run", "r", "--baseline", "compile", "-o", page],
        env)
    html = open(page).read()
    check("torch.compile (default) baselines kept by kbench baseline" in html, "label")
    check("without a baseline time" in html and "2_Softmax" in html, "problem without one")
    missing = run([kbench, "score", "--runs-dir", runs, "--run", "r", "--baseline",
                   "compile:max-autotune"], env, ok=(2,))
    check("kbench baseline --compile --compile-mode max-autotune" in missing.stderr,
          missing.stderr)
    print("kbench baseline: eager and compiled, kept, written, scored against")


if __name__ == "__main__":
    main()
