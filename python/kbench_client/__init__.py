"""A client for kbench serve (docs/service.md): pure Python, the standard library only.

    from kbench_client import Client
    client = Client("http://127.0.0.1:8000", token="...")
    verdict = client.evaluate(reference_code, candidate_code)      # kbench's verdict, a dict
    verdicts = client.evaluate_many([(ref, cand), ...], concurrency=16)

Each verdict is kbench's own (status, reason, speedup, ...) with "mask": true where the outcome is
not the candidate's (kbench's fault, the reference's, a problem that does not fit the device): a
trainer drops those rather than scoring them 0. AsyncClient does the same under asyncio.
"""

import asyncio
import json
import random
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

__all__ = ["Client", "AsyncClient", "KbenchError", "reward"]


class KbenchError(RuntimeError):
    """An answer kbench serve gave that is not a verdict (a bad request, a wrong token)."""

    def __init__(self, status, body):
        self.status = status
        self.body = body
        super().__init__(f"kbench serve answered {status}: {body}")


class Client:
    """Sends evaluations to kbench serve and waits for their verdicts.

    reference: the reference's code (a str), or (level, problem_id) of the server's --dataset.
    Settings the server takes per request (backend, sample_id) go in **settings. Requests that
    get 429 or 5xx, or no answer, are sent again with exponential backoff (Retry-After honoured)
    up to `retries` times; an evaluation is asked for by its content, so sending it again never
    makes a second one.
    """

    def __init__(self, url, token=None, timeout=3600.0, retries=8, poll_s=30.0):
        self.url = url.rstrip("/")
        self.token = token
        self.timeout = timeout
        self.retries = retries
        self.poll_s = poll_s

    def _request(self, method, path, body=None, timeout=60.0):
        data = None if body is None else json.dumps(body).encode()
        for attempt in range(self.retries + 1):
            req = urllib.request.Request(self.url + path, data=data, method=method)
            req.add_header("Content-Type", "application/json")
            if self.token:
                req.add_header("Authorization", "Bearer " + self.token)
            try:
                with urllib.request.urlopen(req, timeout=timeout) as answer:
                    return json.loads(answer.read() or b"null")
            except urllib.error.HTTPError as e:
                text = e.read().decode(errors="replace")
                if e.code != 429 and e.code < 500 or attempt == self.retries:
                    raise KbenchError(e.code, text) from None
                wait = e.headers.get("Retry-After")
                delay = float(wait) if wait and wait.isdigit() else min(2.0**attempt, 60.0)
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                if attempt == self.retries:
                    raise
                delay = min(2.0**attempt, 60.0)
            time.sleep(delay * (0.5 + random.random()))
        raise AssertionError("unreachable")

    @staticmethod
    def _item(reference, candidate, settings):
        item = dict(settings)
        item["candidate"] = candidate
        if isinstance(reference, str):
            item["reference_code"] = reference
        else:
            level, problem_id = reference
            item["reference"] = {"level": int(level), "problem_id": int(problem_id)}
        return item

    def submit(self, reference, candidate, **settings):
        """Queues one evaluation; returns its id."""
        return self._request("POST", "/v1/evaluations", self._item(reference, candidate, settings))["ids"][0]

    def submit_many(self, pairs, **settings):
        """Queues (reference, candidate) pairs in one request; returns their ids, in order."""
        items = [self._item(r, c, settings) for r, c in pairs]
        return self._request("POST", "/v1/evaluations", {"items": items})["ids"]

    def result(self, evaluation_id):
        """The verdict of an evaluation, waiting for it (long polls of poll_s)."""
        deadline = time.monotonic() + self.timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no verdict for {evaluation_id} within {self.timeout} s")
            wait = min(self.poll_s, left)
            answer = self._request("GET", f"/v1/evaluations/{evaluation_id}?wait={wait:.0f}", timeout=wait + 30)
            if answer.get("state") == "done":
                verdict = dict(answer["verdict"])
                verdict["mask"] = answer.get("mask", verdict.get("masked", False))
                verdict["id"] = evaluation_id
                return verdict

    def evaluate(self, reference, candidate, **settings):
        """One verdict: sends the evaluation and waits for it."""
        return self.result(self.submit(reference, candidate, **settings))

    def evaluate_many(self, pairs, concurrency=16, **settings):
        """Verdicts for (reference, candidate) pairs, in order, at most `concurrency` waited on
        at once (all are queued at once)."""
        pairs = list(pairs)
        ids = []
        for start in range(0, len(pairs), 256):
            ids += self.submit_many(pairs[start : start + 256], **settings)
        with ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool:
            return list(pool.map(self.result, ids))

    def health(self):
        return self._request("GET", "/healthz")


class AsyncClient:
    """Client's calls under asyncio (each in a thread of the default executor)."""

    def __init__(self, *args, concurrency=16, **kwargs):
        self._client = Client(*args, **kwargs)
        self._limit = asyncio.Semaphore(concurrency)

    async def evaluate(self, reference, candidate, **settings):
        async with self._limit:
            return await asyncio.to_thread(self._client.evaluate, reference, candidate, **settings)

    async def evaluate_many(self, pairs, **settings):
        return await asyncio.gather(*(self.evaluate(r, c, **settings) for r, c in pairs))


def reward(verdict, speedup_cap=10.0):
    """A scalar reward from a verdict: None where it is masked (drop the sample), 0 where the
    candidate is not correct, else 1 + log2 of its speedup clipped to [0, log2 speedup_cap]."""
    import math

    if verdict.get("mask"):
        return None
    if verdict.get("status") != "correct":
        return 0.0
    speedup = verdict.get("speedup") or 1.0
    return 1.0 + max(0.0, min(math.log2(max(speedup, 1e-9)), math.log2(speedup_cap)))
