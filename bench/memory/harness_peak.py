#!/usr/bin/env python3
"""Peak device memory of the reference harness (ScalingIntelligence/KernelBench) per problem.

For each selected KernelBench problem, an "honest candidate" (the problem's own code followed by
`class ModelNew(Model): pass`) is evaluated by the harness's own `eval_kernel_against_ref`,
imported from a checkout outside the repository (--harness, default local/kernelbench-harness;
nothing of the harness is copied here). Each problem runs in a fresh child process
(`harness_peak.py --one L/P ...`), so an out-of-memory error or a crash cannot poison the next one.

Per problem, one JSON line is appended to --out (flushed at once; problems already there are
skipped, so a cut run resumes):
  level, problem_id, name; compiled / correctness / runtime / ref_runtime / metadata as the harness
  returned them, or error (text), error_type, oom, timeout, returncode; wall_s (child, seconds);
  max_memory_allocated, max_memory_reserved (the caching allocator's peaks, read before the
  harness's own cleanup resets them: eval.py's graceful_eval_cleanup calls
  torch.cuda.reset_peak_memory_stats); device_peak_used (total - free from torch.cuda.mem_get_info,
  polled every --poll-ms by a thread: device-wide, CUDA context included) and device_used_at_start
  (the first such sample, right after CUDA initialised: mostly this process's context); all bytes.

Standard library and torch only. Usage:
  python3 bench/memory/harness_peak.py --problems 1/1-100 2/1-10 3/1-10 --out peaks.jsonl
  python3 bench/memory/harness_peak.py --device-memory 24 ...   # simulate a 24 GiB card
"""

import argparse
import ctypes
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import types

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
GIB = 1 << 30
HONEST_SUFFIX = "\n\nclass ModelNew(Model):\n    pass\n"


# ---------------------------------------------------------------------------------------------
# Problem selection
# ---------------------------------------------------------------------------------------------

def parse_selection(specs):
    """['1/1-100', '2/3,5', '3'] -> set of (level, problem_id) or level-wide (level, None)."""
    sel = set()
    for spec in specs:
        for part in spec.split():
            if "/" not in part:
                sel.add((int(part), None))
                continue
            lvl, ids = part.split("/", 1)
            for rng in ids.split(","):
                if "-" in rng:
                    a, b = rng.split("-", 1)
                    sel.update((int(lvl), p) for p in range(int(a), int(b) + 1))
                else:
                    sel.add((int(lvl), int(rng)))
    return sel


def load_problems(path, selection=None):
    rows = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                r = json.loads(line)
                rows[(int(r["level"]), int(r["problem_id"]))] = r
    keys = sorted(rows)
    if selection:
        keys = [k for k in keys if k in selection or (k[0], None) in selection]
    return [rows[k] for k in keys]


# ---------------------------------------------------------------------------------------------
# Child: one problem, in its own process
# ---------------------------------------------------------------------------------------------

def install_stubs():
    """Make the harness importable where some of its top-level imports are missing.

    `import kernelbench.eval` runs kernelbench/__init__.py, which imports kernelbench/utils.py:
    it imports python-dotenv (load_dotenv() at import), tqdm, openai and litellm at top level, all
    used only by the LLM-query and batch helpers, never by eval_kernel_against_ref. eval.py itself
    imports requests (unused there), numpy, torch and pydantic (KernelExecResult is a pydantic
    BaseModel). A real package is always preferred; only a module that fails to import is replaced
    by a stub, and the stubs used are reported in the result line ("stubs").
    """
    import importlib

    stubbed = []

    def missing(name):
        try:
            importlib.import_module(name)
            return False
        except Exception:
            return True

    def unusable(*_a, **_k):
        raise RuntimeError("stubbed by harness_peak.py: not available here")

    simple = {
        "dotenv": {"load_dotenv": lambda *a, **k: False},
        "openai": {"OpenAI": unusable},
        "litellm": {"completion": unusable},
        "requests": {"get": unusable, "post": unusable},
    }
    for name, attrs in simple.items():
        if missing(name):
            mod = types.ModuleType(name)
            mod.__dict__.update(attrs)
            sys.modules[name] = mod
            stubbed.append(name)

    if missing("tqdm"):
        mod = types.ModuleType("tqdm")

        class tqdm:  # noqa: N801 - the real name
            def __init__(self, iterable=None, *a, **k):
                self.iterable = iterable

            def __iter__(self):
                return iter(self.iterable or ())

            def __enter__(self):
                return self

            def __exit__(self, *a):
                return False

            def update(self, *a):
                pass

        mod.tqdm = tqdm
        sys.modules["tqdm"] = mod
        stubbed.append("tqdm")

    if missing("pydantic"):
        # KernelExecResult(BaseModel) only needs keyword construction with per-instance copies of
        # the class defaults (pydantic copies mutable defaults such as `metadata: dict = {}`),
        # attribute reads and writes. No validation: the harness passes well-typed values.
        import copy

        mod = types.ModuleType("pydantic")

        class BaseModel:
            def __init__(self, **kwargs):
                fields = {}
                for klass in reversed(type(self).__mro__):
                    fields.update(getattr(klass, "__annotations__", {}))
                for name in fields:
                    if name in kwargs:
                        setattr(self, name, kwargs.pop(name))
                    elif hasattr(type(self), name):
                        setattr(self, name, copy.deepcopy(getattr(type(self), name)))
                if kwargs:
                    raise TypeError(f"unexpected fields {sorted(kwargs)}")

            def model_dump(self):
                return dict(vars(self))

        mod.BaseModel = BaseModel
        sys.modules["pydantic"] = mod
        stubbed.append("pydantic")
    return stubbed


def jsonable(x, limit=2000):
    if isinstance(x, dict):
        return {str(k): jsonable(v, limit) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [jsonable(v, limit) for v in x]
    if isinstance(x, (bool, int, float)) or x is None:
        return x
    s = str(x) if not isinstance(x, BaseException) else f"{type(x).__name__}: {x}"
    return s if len(s) <= limit else s[:limit] + "...[cut]"


def is_oom_text(s):
    s = str(s).lower()
    return "out of memory" in s or "outofmemoryerror" in s


class Poller(threading.Thread):
    """Device-wide used memory (total - free), polled; writes its running peak to a side file so
    the parent still learns it when the child dies hard or is killed."""

    def __init__(self, torch, device, period_s, partial_path):
        super().__init__(daemon=True)
        self.torch, self.device, self.period_s = torch, device, period_s
        self.partial_path = partial_path
        self.peak = 0
        self.first = None
        self.total = None
        self.samples = 0
        self.stop_evt = threading.Event()

    def sample(self):
        free, total = self.torch.cuda.mem_get_info(self.device)
        used = total - free
        self.total = total
        if self.first is None:
            self.first = used
        self.peak = max(self.peak, used)
        self.samples += 1

    def write_partial(self):
        if not self.partial_path:
            return
        tmp = self.partial_path + ".tmp"
        with open(tmp, "w") as f:
            json.dump({"device_peak_used": self.peak, "device_used_at_start": self.first,
                       "device_total": self.total, "poll_samples": self.samples}, f)
        os.replace(tmp, self.partial_path)

    def run(self):
        last_write = 0.0
        while not self.stop_evt.is_set():
            try:
                self.sample()
            except Exception:
                pass
            now = time.monotonic()
            if now - last_write > 0.5:
                try:
                    self.write_partial()
                except Exception:
                    pass
                last_write = now
            self.stop_evt.wait(self.period_s)

    def stop(self):
        self.stop_evt.set()
        self.join(timeout=2)
        try:
            self.sample()
            self.write_partial()
        except Exception:
            pass


def run_one(args):
    level, pid = (int(x) for x in args.one.split("/"))
    rows = load_problems(args.jsonl, {(level, pid)})
    if not rows:
        raise SystemExit(f"no problem {level}/{pid} in {args.jsonl}")
    row = rows[0]
    rec = {"level": level, "problem_id": pid, "name": row.get("name")}
    t0 = time.monotonic()

    def finish():
        rec["wall_s"] = round(time.monotonic() - t0, 3)
        with open(args.result, "w") as f:
            json.dump(rec, f)

    # The harness's own checkout: src/ holds the `kernelbench` package.
    harness = os.path.abspath(args.harness)
    src = os.path.join(harness, "src")
    sys.path.insert(0, src if os.path.isdir(os.path.join(src, "kernelbench")) else harness)
    rec["stubs"] = install_stubs()

    import torch

    rec["torch"] = torch.__version__
    poller = None
    try:
        # Importing kernelbench.eval initialises CUDA when a device is present: the default of
        # eval_kernel_against_ref's `device` argument calls torch.cuda.current_device().
        from kernelbench import eval as kb_eval

        device = torch.device(args.device)
        if device.type == "cuda" and torch.cuda.is_available():
            torch.cuda.set_device(device)
            poller = Poller(torch, device, args.poll_ms / 1000.0, args.result + ".partial")
            poller.sample()  # context is up: this is the baseline
            poller.start()
            rec["gpu"] = torch.cuda.get_device_name(device)
            rec["device_total"] = poller.total
            if args.device_memory:
                cap = int(args.device_memory * GIB)
                if args.cap_minus_context:
                    cap -= poller.first
                frac = min(1.0, cap / poller.total)
                torch.cuda.set_per_process_memory_fraction(frac, device)
                rec["cap_bytes"] = cap
                rec["cap_fraction"] = frac

        # Read the allocator's peaks just before the harness resets them (eval.py,
        # graceful_eval_cleanup: empty_cache + reset_peak_memory_stats), at every call of it.
        peaks = {"max_memory_allocated": 0, "max_memory_reserved": 0}

        def note_peaks():
            if torch.cuda.is_available() and torch.cuda.is_initialized():
                peaks["max_memory_allocated"] = max(peaks["max_memory_allocated"],
                                                    torch.cuda.max_memory_allocated(device))
                peaks["max_memory_reserved"] = max(peaks["max_memory_reserved"],
                                                   torch.cuda.max_memory_reserved(device))

        original_cleanup = kb_eval.graceful_eval_cleanup

        def cleanup_with_peaks(*a, **k):
            note_peaks()
            return original_cleanup(*a, **k)

        kb_eval.graceful_eval_cleanup = cleanup_with_peaks

        precision = kb_eval.get_torch_dtype_from_string(args.precision)
        kwargs = dict(
            original_model_src=row["code"],
            custom_model_src=row["code"] + HONEST_SUFFIX,
            seed_num=args.seed,
            num_correct_trials=args.num_correct_trials,
            num_perf_trials=args.num_perf_trials,
            measure_performance=True,
            timing_method=args.timing_method,
            verbose=False,
            build_dir=None,
            device=device,
            backend="cuda",
            precision=precision,
        )
        rec["call"] = {k: (v if k not in ("original_model_src", "custom_model_src") else "...")
                       for k, v in kwargs.items()}
        rec["call"]["device"] = str(device)
        rec["call"]["precision"] = args.precision
        try:
            result = kb_eval.eval_kernel_against_ref(**kwargs)
            if result is None:  # the harness's "lock file error, please retry"
                rec["error"] = "harness returned None (lock-file error path)"
                rec["error_type"] = "None"
            else:
                for k in ("compiled", "correctness", "runtime", "ref_runtime"):
                    rec[k] = getattr(result, k, None)
                rec["runtime_stats"] = jsonable(getattr(result, "runtime_stats", {}))
                rec["metadata"] = jsonable(getattr(result, "metadata", {}))
        except BaseException as e:  # noqa: BLE001 - anything the harness lets through
            rec["error"] = jsonable(e, 4000)
            rec["error_type"] = f"{type(e).__module__}.{type(e).__name__}"
            rec["traceback"] = traceback.format_exc()[-4000:]
        note_peaks()
        rec.update(peaks)
    except BaseException as e:  # noqa: BLE001 - import or set-up failure
        rec["error"] = jsonable(e, 4000)
        rec["error_type"] = f"{type(e).__module__}.{type(e).__name__}"
        rec["traceback"] = traceback.format_exc()[-4000:]
    finally:
        if poller is not None:
            poller.stop()
            rec["device_peak_used"] = poller.peak
            rec["device_used_at_start"] = poller.first
            rec["poll_samples"] = poller.samples
        rec["oom"] = bool(is_oom_text(rec.get("error", "")) or is_oom_text(
            json.dumps(rec.get("metadata", {}))))
        finish()


# ---------------------------------------------------------------------------------------------
# Parent: one child per problem
# ---------------------------------------------------------------------------------------------

def done_keys(path):
    keys = set()
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            for line in f:
                try:
                    r = json.loads(line)
                    keys.add((int(r["level"]), int(r["problem_id"])))
                except Exception:
                    pass
    return keys


def harness_commit(harness):
    p = os.path.join(harness, "COMMIT")
    if os.path.exists(p):
        return open(p).read().strip()
    return None


def child_argv(args, key):
    argv = [sys.executable, os.path.abspath(__file__), "--one", f"{key[0]}/{key[1]}",
            "--jsonl", args.jsonl, "--harness", args.harness, "--device", args.device,
            "--num-correct-trials", str(args.num_correct_trials),
            "--num-perf-trials", str(args.num_perf_trials), "--seed", str(args.seed),
            "--precision", args.precision, "--timing-method", args.timing_method,
            "--poll-ms", str(args.poll_ms)]
    if args.device_memory:
        argv += ["--device-memory", str(args.device_memory)]
    if args.cap_minus_context:
        argv += ["--cap-minus-context"]
    return argv


def gib(x):
    return f"{x / GIB:.2f}" if isinstance(x, (int, float)) else "-"


class ProcessMemory(threading.Thread):
    """Each child's own device memory (context, allocator and anything else it holds), polled
    through NVML's per-process list (libnvidia-ml, by ctypes; no Python package needed). With
    several children at once this is what keeps their peaks apart; where NVML cannot list
    processes (some sandboxed machines) `available` is False and only the allocator's peaks and
    the device-wide poll remain."""

    class Info(ctypes.Structure):  # nvmlProcessInfo_t, v2/v3 layout
        _fields_ = [("pid", ctypes.c_uint), ("usedGpuMemory", ctypes.c_ulonglong),
                    ("gpuInstanceId", ctypes.c_uint), ("computeInstanceId", ctypes.c_uint)]

    def __init__(self, index, period_s):
        super().__init__(daemon=True)
        self.ctypes, self.period_s = ctypes, period_s
        self.peaks, self.total, self.available = {}, None, False
        self.lock = threading.Lock()
        self.stop_evt = threading.Event()
        try:
            nvml = ctypes.CDLL("libnvidia-ml.so.1")
            if nvml.nvmlInit_v2() != 0:
                return
            handle = ctypes.c_void_p()
            if nvml.nvmlDeviceGetHandleByIndex_v2(index, ctypes.byref(handle)) != 0:
                return
            self.nvml, self.handle = nvml, handle
            self.list = getattr(nvml, "nvmlDeviceGetComputeRunningProcesses_v3", None) or \
                nvml.nvmlDeviceGetComputeRunningProcesses_v2

            class Memory(ctypes.Structure):
                _fields_ = [("total", ctypes.c_ulonglong), ("free", ctypes.c_ulonglong),
                            ("used", ctypes.c_ulonglong)]

            m = Memory()
            if nvml.nvmlDeviceGetMemoryInfo(handle, ctypes.byref(m)) == 0:
                self.total = m.total
            self.available = self.sample() is not None
        except (OSError, AttributeError):
            self.available = False

    def sample(self):
        c = self.ctypes
        infos = (self.Info * 256)()
        count = c.c_uint(256)
        if self.list(self.handle, c.byref(count), infos) != 0:
            return None
        with self.lock:
            for i in range(count.value):
                pid, used = infos[i].pid, infos[i].usedGpuMemory
                if used < (1 << 63):  # NVML_VALUE_NOT_AVAILABLE is all ones
                    self.peaks[pid] = max(self.peaks.get(pid, 0), used)
        return count.value

    def take(self, pid):
        with self.lock:
            return self.peaks.pop(pid, None)

    def run(self):
        while not self.stop_evt.wait(self.period_s):
            self.sample()


def input_bytes(rows):
    """One call's inputs of each problem, from its get_inputs() on PyTorch's meta device (shapes
    and dtypes only, nothing allocated); None where that fails."""
    import torch

    need = {}
    for row in rows:
        key = (int(row["level"]), int(row["problem_id"]))
        try:
            ns = {"__name__": "kernelbench_problem"}
            with torch.device("meta"):
                exec(compile(row["code"], f"problem_{key[0]}_{key[1]}", "exec"), ns)
                inputs = ns["get_inputs"]()
            need[key] = sum(t.numel() * t.element_size() for t in inputs
                            if isinstance(t, torch.Tensor))
        except Exception:  # noqa: BLE001 - a problem that needs a real device: no guess
            need[key] = None
    return need


def need_guess(inputs, capacity, factor=8.0, floor=2 * GIB):
    """A guess of what the harness needs for a problem: `factor` x one call's inputs + `floor`
    (it keeps the inputs, the reference's and the candidate's outputs and copies of them: 7 x the
    inputs on elementwise problems, measured); the whole device where the inputs are unknown."""
    return capacity if inputs is None else int(factor * inputs + floor)


def run_all(args):
    problems = load_problems(args.jsonl, parse_selection(args.problems) if args.problems else None)
    done = done_keys(args.out)
    todo = [r for r in problems if (int(r["level"]), int(r["problem_id"])) not in done]
    commit = harness_commit(args.harness)
    print(f"harness_peak: {len(problems)} selected, {len(problems) - len(todo)} already in "
          f"{args.out}, {len(todo)} to run; harness {commit or '?'}", file=sys.stderr, flush=True)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    if args.log_dir:
        os.makedirs(args.log_dir, exist_ok=True)
    t_start = time.monotonic()
    lock = threading.Lock()
    counter = [0]
    nvml = ProcessMemory(int(args.device.partition(":")[2] or 0), args.poll_ms / 1000.0)
    if nvml.available:
        nvml.start()
    capacity, sizes = None, {}
    if args.jobs > 1:
        capacity = int(args.device_memory * GIB) if args.device_memory else nvml.total
        if capacity is None:
            raise SystemExit("--jobs above 1 needs NVML (for the device's size) or --device-memory")
        capacity = int(capacity * 0.92)
        sizes = input_bytes(todo)
        # Largest first, so that small problems fill in beside the large ones.
        todo.sort(key=lambda r: -(sizes.get((int(r["level"]), int(r["problem_id"]))) or 0))
    cond = threading.Condition()
    running = {}  # key -> {"need", "shared"}

    def fits(key):
        need = need_guess(sizes.get(key), capacity) if capacity else 0
        if not running:
            return need
        if len(running) >= args.jobs or not capacity:
            return None
        return need if sum(r["need"] for r in running.values()) + need <= capacity else None

    def one(row, key, need):
        """Runs in its own thread: the child, then its line (or, out of memory beside others,
        back on the list to run alone)."""
        rec = run_child(row, key)
        with cond:
            slot = running.pop(key)
            cond.notify_all()
        rec["shared_device"] = slot["shared"]
        rec["retried_alone"] = slot["alone"]
        if slot["shared"] and rec.get("oom"):
            with cond:
                retry.append(row)  # measured again with the device to itself
                cond.notify_all()
            return
        write(rec, key, row)


    def run_child(row, key):
        fd, result = tempfile.mkstemp(prefix="harness_peak_", suffix=".json")
        os.close(fd)
        os.remove(result)
        argv = child_argv(args, key) + ["--result", result]
        t0 = time.monotonic()
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                start_new_session=True, cwd=args.child_cwd or None)
        timed_out = False
        try:
            output, _ = proc.communicate(timeout=args.timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            try:
                os.killpg(proc.pid, signal.SIGKILL)  # the child's own session only
            except ProcessLookupError:
                pass
            output, _ = proc.communicate()
        wall = time.monotonic() - t0
        text = output.decode("utf-8", "replace")
        if args.log_dir:
            with open(os.path.join(args.log_dir, f"L{key[0]}_P{key[1]}.log"), "w") as f:
                f.write(text)
        rec = None
        if os.path.exists(result):
            with open(result) as f:
                rec = json.load(f)
            os.remove(result)
        if rec is None:
            rec = {"level": key[0], "problem_id": key[1], "name": row.get("name"),
                   "wall_s": round(wall, 3)}
            if os.path.exists(result + ".partial"):
                with open(result + ".partial") as f:
                    rec.update(json.load(f))
            rec["error"] = ("timeout after %ss" % args.timeout if timed_out
                            else f"child exited {proc.returncode} without a result")
            rec["error_type"] = "timeout" if timed_out else "crash"
            rec["oom"] = is_oom_text(text[-20000:])
            rec["output_tail"] = text[-3000:]
        if os.path.exists(result + ".partial"):
            os.remove(result + ".partial")
        rec["timeout"] = timed_out
        rec["returncode"] = proc.returncode
        rec["parent_wall_s"] = round(wall, 3)
        rec["harness_commit"] = commit
        rec["num_correct_trials"] = args.num_correct_trials
        rec["num_perf_trials"] = args.num_perf_trials
        rec["device_memory_gib"] = args.device_memory
        rec["jobs"] = args.jobs  # with more than one, device_peak_used counts the others too
        rec["process_peak_used"] = nvml.take(proc.pid) if nvml.available else None
        return rec

    def write(rec, key, row):
        status = ("TIMEOUT" if rec["timeout"] else "OOM" if rec.get("oom")
                  else "ERROR" if rec.get("error") else
                  "correct" if rec.get("correctness") else "incorrect")
        with lock:
            out.write(json.dumps(rec) + "\n")
            out.flush()
            os.fsync(out.fileno())
            counter[0] += 1
            print(f"[{counter[0]}/{len(todo)}] L{key[0]}/P{key[1]} {row.get('name')}: {status} "
                  f"dev_peak={gib(rec.get('device_peak_used'))}GiB "
                  f"alloc={gib(rec.get('max_memory_allocated'))}GiB "
                  f"resv={gib(rec.get('max_memory_reserved'))}GiB "
                  f"process={gib(rec.get('process_peak_used'))}GiB "
                  f"{rec['parent_wall_s']:.1f}s{' (beside others)' if rec['shared_device'] else ''}",
                  file=sys.stderr, flush=True)

    retry, threads = [], []
    pending = list(todo)
    out = open(args.out, "a", encoding="utf-8")
    with cond:
        while pending or retry or running:
            if args.deadline_s and time.monotonic() - t_start > args.deadline_s:
                pending.clear()
                retry.clear()
            started = False
            for queue, alone in ((pending, False), (retry, True)):
                for row in list(queue):
                    key = (int(row["level"]), int(row["problem_id"]))
                    need = fits(key)
                    if need is None or (alone and running):
                        continue
                    queue.remove(row)
                    for r in running.values():
                        r["shared"] = True
                    running[key] = {"need": need, "shared": bool(running), "alone": alone}
                    t = threading.Thread(target=one, args=(row, key, need), daemon=True)
                    t.start()
                    threads.append(t)
                    started = True
                    break
                if started or (queue is pending and pending):
                    break
            if not started:
                cond.wait(1.0)
    for t in threads:
        t.join()
    out.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--jsonl", default=os.path.join(ROOT, "local", "kernelbench.jsonl"),
                    help="KernelBench problems, one JSON object a line (level, problem_id, name, "
                         "code); default local/kernelbench.jsonl")
    ap.add_argument("--harness", default=os.path.join(ROOT, "local", "kernelbench-harness"),
                    help="checkout of ScalingIntelligence/KernelBench (default "
                         "local/kernelbench-harness)")
    ap.add_argument("--problems", nargs="*",
                    help="selection: LEVEL/ID, LEVEL/A-B, LEVEL/A,B or LEVEL (default: all)")
    ap.add_argument("--out", default="harness_peak.jsonl", help="JSON lines, appended")
    ap.add_argument("--device", default="cuda:0")
    ap.add_argument("--device-memory", type=float, metavar="GIB",
                    help="cap the caching allocator at GIB GiB "
                         "(torch.cuda.set_per_process_memory_fraction) to act as a smaller card")
    ap.add_argument("--cap-minus-context", action="store_true",
                    help="subtract the device memory already used at start (the CUDA context) "
                         "from the --device-memory cap, as on a real card of that size")
    ap.add_argument("--num-correct-trials", type=int, default=5)
    ap.add_argument("--num-perf-trials", type=int, default=10)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--precision", default="fp32", choices=["fp32", "fp16", "bf16"])
    ap.add_argument("--timing-method", default="cuda_event")
    ap.add_argument("--poll-ms", type=float, default=5.0)
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds per problem")
    ap.add_argument("--jobs", type=int, default=1,
                    help="problems at once, each in its own child (peaks per process stay its "
                         "own; the device-wide poll then counts the others too)")
    ap.add_argument("--deadline-s", type=float,
                    help="start no new problem after this many seconds")
    ap.add_argument("--log-dir", help="write each child's stdout+stderr here")
    ap.add_argument("--child-cwd", help="working directory of the children")
    ap.add_argument("--one", metavar="L/P", help=argparse.SUPPRESS)
    ap.add_argument("--result", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        if not args.result:
            ap.error("--one needs --result")
        run_one(args)
    else:
        run_all(args)


if __name__ == "__main__":
    main()
