"""kbench serve on the CPU, on loopback, through the Python client (python/kbench_client) and
requests shaped as KernelGYM's client sends them: verdicts as kbench check gives them (the
fixtures' expected ones), the token, idempotent requests, 429 on a full queue, the mask flag, a
restart that loses nothing queued.

    service_test.py KBENCH PYTHON WORKDIR
"""

import json
import os
import pathlib
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

KBENCH, PYTHON, WORK = sys.argv[1], sys.argv[2], pathlib.Path(sys.argv[3])
ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))
from kbench_client import Client, KbenchError, reward  # noqa: E402

FIXTURES = ROOT / "tests" / "fixtures"
REFERENCE = (FIXTURES / "references" / "relu_small.py").read_text()
failures = []


def check(condition, what):
    print(("ok   " if condition else "FAIL ") + what, flush=True)
    if not condition:
        failures.append(what)


def fixture(name):
    text = (FIXTURES / "cpu" / name).read_text()
    return text, re.search(r"^# expect: (\w+)", text, re.M).group(1)


SERVERS = []


class Server:
    def __init__(self, name, *args):
        SERVERS.append(self)
        self.dir = WORK / name
        self.dir.mkdir(parents=True, exist_ok=True)
        self.args = args
        self.start()

    def start(self):
        log = self.dir / "serve.err"
        skip = log.stat().st_size if log.exists() else 0
        self.err = open(log, "a")
        self.proc = subprocess.Popen(
            [KBENCH, "serve", "--device", "cpu", "--port", "0", "--python", PYTHON, "--runs-dir",
             str(self.dir / "runs"), "--max-seconds", "0.5", *self.args],
            stdout=subprocess.DEVNULL, stderr=self.err, cwd=self.dir)
        deadline = time.time() + 120
        while time.time() < deadline:
            text = log.read_text()[skip:]
            found = re.findall(r"listening on (http://127\.0\.0\.1:\d+)", text)
            if found:
                self.url = found[-1]
                return
            if self.proc.poll() is not None:
                raise SystemExit("kbench serve ended:\n" + text[-3000:])
            time.sleep(0.2)
        raise SystemExit("kbench serve did not listen within 120 s")

    def stop(self):
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.err.close()
        return self.proc.returncode


def raw(url, method, path, body=None, token=None):
    req = urllib.request.Request(url + path, method=method,
                                 data=None if body is None else json.dumps(body).encode())
    if token:
        req.add_header("Authorization", "Bearer " + token)
    try:
        with urllib.request.urlopen(req, timeout=600) as answer:
            return answer.status, dict(answer.headers), answer.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read().decode()


def main():
    shutil.rmtree(WORK, ignore_errors=True)
    WORK.mkdir(parents=True)
    token = "k" * 8 + os.urandom(12).hex()
    (WORK / "token").write_text(token + "\n")

    # The server's problem set: the fixtures' reference, and one whose get_inputs fails.
    broken = REFERENCE.replace("def get_inputs():", "def get_inputs():\n    raise RuntimeError('broken reference')\n\ndef _unused():")
    with open(WORK / "problems.jsonl", "w") as f:
        for pid, (name, code) in enumerate([("1_relu_small", REFERENCE), ("2_broken", broken)], 1):
            f.write(json.dumps({"level": 1, "problem_id": pid, "name": name, "code": code}) + "\n")
    (WORK / "token").chmod(0o600)
    server = Server("main", "--token-file", str(WORK / "token"), "--queue-size", "8",
                    "--dataset", str(WORK / "problems.jsonl"))
    client = Client(server.url, token, timeout=600)

    # The token: none, or a wrong one, is 401 (never retried).
    status, _, _ = raw(server.url, "POST", "/v1/evaluations", {"reference_code": REFERENCE, "candidate": "x"})
    check(status == 401, "a request without the token: 401")
    try:
        Client(server.url, "wrong-token-0123456789").submit(REFERENCE, fixture("honest.py")[0])
        check(False, "a wrong token: 401")
    except KbenchError as e:
        check(e.status == 401, "a wrong token: 401")
    check(raw(server.url, "GET", "/healthz")[0] == 200, "/healthz answers without the token")

    # Verdicts as the fixtures expect them (kbench check's), honest and hostile alike, sent at
    # once from several threads; each evaluation asked for twice.
    names = ["honest.py", "wrong_values.py", "hack_timer_patch.py", "hack_thread.py"]
    verdicts = {}

    def ask(name):
        verdicts.setdefault(name, []).append(client.evaluate(REFERENCE, fixture(name)[0]))

    threads = [threading.Thread(target=ask, args=(n,)) for n in names * 2]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for name in names:
        expected = fixture(name)[1]
        got = [v["status"] for v in verdicts[name]]
        check(got == [expected, expected], f"{name}: {got} through the service, {expected} by kbench check")
        check(len({v["id"] for v in verdicts[name]}) == 1, f"{name}: one evaluation for two requests")
        check(all(v["mask"] is False for v in verdicts[name]), f"{name}: not masked")
    check(reward(verdicts["honest.py"][0]) >= 1.0 and reward(verdicts["wrong_values.py"][0]) == 0.0,
          "reward(): 1 and more for correct, 0 for incorrect")

    # A repeat is answered from the store at once.
    start = time.time()
    status, _, body = raw(server.url, "POST", "/v1/evaluations",
                          {"reference_code": REFERENCE, "candidate": fixture("honest.py")[0]}, token)
    check(status == 202 and json.loads(body)["evaluations"][0]["state"] == "done"
          and time.time() - start < 2, "a repeated evaluation: done at once")

    # The reference's failure is masked: a trainer drops it.
    masked = client.evaluate((1, 2), fixture("honest.py")[0])
    check(masked["mask"] is True and reward(masked) is None,
          f"a reference that fails: masked ({masked['status']}, blame {masked.get('blame')})")

    # The queue's bound: a batch that does not fit is refused whole, 429 with Retry-After.
    many = [{"reference_code": REFERENCE, "candidate": fixture("honest.py")[0] + f"\n# variant {i}\n"} for i in range(9)]
    status, headers, _ = raw(server.url, "POST", "/v1/evaluations", {"items": many}, token)
    check(status == 429 and "Retry-After" in headers, f"9 evaluations into a queue of 8: {status}")
    status, _, body = raw(server.url, "POST", "/v1/evaluations", {"reference_code": REFERENCE}, token)
    check(status == 422 and "candidate" in body, "an evaluation without a candidate: 422 saying so")
    # A reference that is not one of --dataset's runs in the judge: refused without
    # --trust-reference-code.
    status, _, body = raw(server.url, "POST", "/v1/evaluations",
                          {"reference_code": REFERENCE + "\n# other\n", "candidate": fixture("honest.py")[0]}, token)
    check(status == 422 and "--trust-reference-code" in body, "a reference outside --dataset: 422")
    status, _, body = raw(server.url, "POST", "/v1/evaluations",
                          {"reference": {"level": 4294967297, "problem_id": 1}, "candidate": "x"}, token)
    check(status == 422 and "whole number" in body, "a level past int's range: 422")
    check(oct(os.stat(server.dir / "runs" / "serve").st_mode & 0o777) == "0o700", "the run folder is its user's alone")

    # KernelGYM's client: POST /evaluate (answered when done), /status, /results, a batch.
    task = {"task_id": "kg_000001_ab", "reference_code": REFERENCE, "kernel_code": fixture("wrong_values.py")[0],
            "backend": "triton", "num_correct_trials": 5, "num_perf_trials": 100, "timeout": 600,
            "priority": "normal", "verbose_errors": True, "enable_profiling": True, "detect_decoy_kernel": True}
    status, _, body = raw(server.url, "POST", "/evaluate", task, token)
    result = json.loads(body)
    check(status == 200 and result["status"] == "completed" and result["correctness"] is False
          and result["compiled"] is True and result["error_code"] == "CORRECTNESS_ERROR",
          f"KernelGYM /evaluate: {status} {result.get('status')} {result.get('error_code')}")
    status, _, body = raw(server.url, "GET", "/status/kg_000001_ab", None, token)
    check(status == 200 and json.loads(body)["status"] == "completed", "KernelGYM /status")
    status, _, body = raw(server.url, "GET", "/results/kg_000001_ab", None, token)
    check(status == 200 and json.loads(body)["task_id"] == "kg_000001_ab", "KernelGYM /results")
    check(raw(server.url, "GET", "/results/unknown", None, token)[0] == 404, "KernelGYM /results of an unknown task: 404")
    batch = {"batch_id": "b1", "tasks": [dict(task, task_id="kg_b1", kernel_code=fixture("honest.py")[0]),
                                         dict(task, task_id="kg_b2")]}
    status, _, body = raw(server.url, "POST", "/evaluate/batch", batch, token)
    answer = json.loads(body)
    check(status == 200 and [r["correctness"] for r in answer["results"]] == [True, False]
          and answer["total_tasks"] == 2, "KernelGYM /evaluate/batch")
    # Server-sent events: every verdict so far (after=0), in the order they came.
    import http.client
    host, port = server.url.split("//")[1].split(":")
    stream = http.client.HTTPConnection(host, int(port), timeout=30)
    stream.request("GET", "/v1/events?after=0", headers={"Authorization": "Bearer " + token})
    answer = stream.getresponse()
    events = []
    while len(events) < 3:
        line = answer.fp.readline().decode()
        if line.startswith("data: "):
            events.append(json.loads(line[6:]))
    stream.close()
    check(answer.status == 200 and [e["seq"] for e in events] == [1, 2, 3]
          and all("verdict" in e and "mask" in e for e in events), "/v1/events: verdicts in order")
    metrics = raw(server.url, "GET", "/metrics", None, token)[2]
    check('kbench_verdicts_total{status="correct"}' in metrics and "kbench_queue_depth" in metrics,
          "/metrics: verdicts by status, the queue's depth")
    server.stop()

    # A restart loses nothing queued: two evaluations queued, the server stopped at once, started
    # again on the same store, and both verdicts come.
    server = Server("restart", "--trust-reference-code")
    client = Client(server.url, timeout=600)
    ids = client.submit_many([(REFERENCE, fixture("honest.py")[0] + "\n# restart 1\n"),
                              (REFERENCE, fixture("wrong_values.py")[0] + "\n# restart 2\n")])
    server.stop()
    server.start()
    client = Client(server.url, timeout=600)
    after = [client.result(i)["status"] for i in ids]
    check(after == ["correct", "incorrect"], f"after a restart: {after}")
    server.stop()

    if failures:
        print(f"{len(failures)} check(s) failed:\n  " + "\n  ".join(failures))
        return 1
    print("every check passed")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    finally:
        # A failed check leaves no server behind.
        for server in SERVERS:
            if server.proc.poll() is None:
                server.proc.kill()
                server.proc.wait()
