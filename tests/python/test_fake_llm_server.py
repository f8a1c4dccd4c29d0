"""Tests of tests/llm/fake_llm_server.py, the scripted language-model server.

Run from the repository root:
    python3 -m pytest -q -p no:cacheprovider tests/python/test_fake_llm_server.py
"""

import json
import pathlib
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
SERVER_PY = ROOT / "tests" / "llm" / "fake_llm_server.py"

MESSAGES = [{"role": "user", "content": "Write a kernel."}]
ANSWER = "Here is a kernel: __global__ void k(float* x) { x[0] = 1.0f; } — ünïcode too."
THOUGHT = "The user wants a kernel; a trivial one will do."


class Server:
    """A server process, started on a free port with the given rules."""

    def __init__(self, folder, rules, name="server"):
        self.folder = pathlib.Path(folder)
        self.script = self.folder / f"{name}.json"
        self.log = self.folder / f"{name}.jsonl"
        self.stderr_path = self.folder / f"{name}.stderr"
        self.script.write_text(json.dumps({"rules": rules}))
        self.stderr = open(self.stderr_path, "w")
        self.process = subprocess.Popen(
            [sys.executable, str(SERVER_PY), "--script", str(self.script), "--log",
             str(self.log), "--port", "0"],
            stdout=subprocess.PIPE, stderr=self.stderr, text=True)
        line = self.process.stdout.readline()
        assert line.startswith("PORT "), line
        self.port = int(line.split()[1])
        self.base = f"http://127.0.0.1:{self.port}"

    def stop(self):
        self.process.terminate()
        code = self.process.wait(timeout=5)
        self.process.stdout.close()
        self.stderr.close()
        errors = self.stderr_path.read_text()
        assert code == 0, errors
        assert "Traceback" not in errors, errors

    def entries(self):
        return [json.loads(line) for line in self.log.read_text().splitlines()]


def post(url, body, headers=None, timeout=5.0):
    """(status, headers, body bytes) of a POST of `body` as JSON; errors give their status."""
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json",
                                              **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, response.headers, response.read()
    except urllib.error.HTTPError as error:
        with error:
            return error.code, error.headers, error.read()


def raw_exchange(port, method, path, body, timeout=5.0):
    """Everything the server sends, until it closes, for one request sent over a socket."""
    data = json.dumps(body).encode()
    head = (f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n")
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as connection:
        connection.sendall(head.encode() + data)
        received = bytearray()
        while True:
            try:
                piece = connection.recv(65536)
            except ConnectionResetError:
                break
            if not piece:
                break
            received += piece
    return bytes(received)


def dechunk(data):
    """(payload, complete) of a chunked body; complete when the final 0-size chunk came."""
    payload = bytearray()
    while True:
        line_end = data.find(b"\r\n")
        if line_end < 0:
            return bytes(payload), False
        size = int(data[:line_end], 16)
        if size == 0:
            return bytes(payload), True
        start = line_end + 2
        if len(data) < start + size + 2:
            return bytes(payload + data[start:start + size]), False
        payload += data[start:start + size]
        data = data[start + size + 2:]


def parse_sse(text):
    """(events, comments): events as (name or None, data string), in order."""
    events, comments = [], []
    for block in text.split("\n\n"):
        if not block.strip():
            continue
        name, data = None, []
        for line in block.split("\n"):
            if line.startswith(":"):
                comments.append(line[1:].strip())
            elif line.startswith("event:"):
                name = line[len("event:"):].strip()
            elif line.startswith("data:"):
                data.append(line[len("data:"):].lstrip(" "))
        if data:
            events.append((name, "\n".join(data)))
    return events, comments


RULES = [
    {"match": {"model": "rate"}, "status": 429, "retry_after": 7},
    {"match": {"model": "broken"}, "status": 500},
    {"match": {"model": "custom"}, "status": 503, "body": "{\"oops\": true}",
     "headers": {"X-Extra": "yes"}},
    {"match": {"model": "drop"}, "drop": True},
    {"match": {"model": "cut"}, "text": "abcdefghijklmnop", "chunk_chars": 4,
     "drop_after_chunks": 3},
    {"match": {"model": "slow"}, "delay_s": 0.8, "text": "late"},
    {"match": {"model": "bad"}, "malformed": True, "text": "never parsed"},
    {"match": {"model": "sized"}, "text": "fixed", "usage": {"input": 11, "output": 22},
     "finish_reason": "length"},
    {"match": {"model": "file"}, "text_file": "answer.txt"},
    {"match": {"model": "plain"}, "text": ANSWER},
    {"text": ANSWER, "reasoning": THOUGHT, "chunk_chars": 5},
]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    folder = tmp_path_factory.mktemp("fake_llm")
    (folder / "answer.txt").write_text("from a file\n")
    running = Server(folder, RULES)
    yield running
    running.stop()


@pytest.fixture
def fresh(tmp_path):
    """Starts servers with rules of the test's own; stops them afterwards."""
    started = []

    def start(rules):
        started.append(Server(tmp_path, rules, name=f"server{len(started)}"))
        return started[-1]

    yield start
    for running in started:
        running.stop()


# --- OpenAI -------------------------------------------------------------------------------------


def test_openai_json(server):
    status, headers, data = post(server.base + "/v1/chat/completions",
                                 {"model": "m", "messages": MESSAGES},
                                 {"Authorization": "Bearer k"})
    assert status == 200
    assert headers["Content-Type"] == "application/json"
    assert int(headers["Content-Length"]) == len(data)
    reply = json.loads(data)
    assert reply["object"] == "chat.completion"
    assert reply["id"].startswith("chatcmpl-")
    assert reply["model"] == "m"
    choice = reply["choices"][0]
    assert choice["message"] == {"role": "assistant", "content": ANSWER,
                                 "reasoning_content": THOUGHT}
    assert choice["finish_reason"] == "stop"
    prompt, completion = len(json.dumps(MESSAGES)) // 4, len(ANSWER) // 4 + 1
    assert reply["usage"] == {"prompt_tokens": prompt, "completion_tokens": completion,
                              "total_tokens": prompt + completion}


def test_openai_json_usage_finish_and_text_file(server):
    reply = json.loads(post(server.base + "/v1beta/openai/chat/completions",
                            {"model": "sized", "messages": MESSAGES})[2])
    assert reply["choices"][0]["finish_reason"] == "length"
    assert reply["choices"][0]["message"] == {"role": "assistant", "content": "fixed"}
    assert reply["usage"] == {"prompt_tokens": 11, "completion_tokens": 22, "total_tokens": 33}
    reply = json.loads(post(server.base + "/chat/completions",
                            {"model": "file", "messages": MESSAGES})[2])
    assert reply["choices"][0]["message"]["content"] == "from a file\n"


def openai_stream(server, body):
    status, headers, data = post(server.base + "/v1/chat/completions", body)
    assert status == 200
    assert headers["Content-Type"] == "text/event-stream"
    events, comments = parse_sse(data.decode())
    assert comments == ["keep-alive"]
    assert all(name is None for name, _ in events)
    assert events[-1][1] == "[DONE]"
    return [json.loads(payload) for _, payload in events[:-1]]


def test_openai_stream(server):
    chunks = openai_stream(server, {"model": "m", "messages": MESSAGES, "stream": True,
                                    "stream_options": {"include_usage": True}})
    assert all(chunk["object"] == "chat.completion.chunk" for chunk in chunks)
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    deltas = [chunk["choices"][0]["delta"] for chunk in chunks if chunk["choices"]]
    reasoning = "".join(delta.get("reasoning_content", "") for delta in deltas)
    text = "".join(delta.get("content", "") for delta in deltas)
    assert (reasoning, text) == (THOUGHT, ANSWER)
    pieces = [delta["content"] for delta in deltas[1:] if "content" in delta]
    assert all(len(piece) <= 5 for piece in pieces) and len(pieces) == -(-len(ANSWER) // 5)
    assert chunks[-2]["choices"][0] == {"index": 0, "delta": {}, "finish_reason": "stop"}
    assert chunks[-1]["choices"] == []
    assert chunks[-1]["usage"]["completion_tokens"] == len(ANSWER) // 4 + 1


def test_openai_stream_without_usage(server):
    chunks = openai_stream(server, {"model": "plain", "messages": MESSAGES, "stream": True})
    assert chunks[-1]["choices"][0]["finish_reason"] == "stop"
    assert all("usage" not in chunk for chunk in chunks)
    assert "".join(chunk["choices"][0]["delta"].get("content", "") for chunk in chunks) \
        == ANSWER


# --- Anthropic ----------------------------------------------------------------------------------


def test_anthropic_json(server):
    status, _, data = post(server.base + "/v1/messages",
                           {"model": "claude", "max_tokens": 100, "system": "Be brief.",
                            "messages": MESSAGES},
                           {"x-api-key": "k", "anthropic-version": "2023-06-01"})
    assert status == 200
    reply = json.loads(data)
    assert reply["type"] == "message" and reply["role"] == "assistant"
    assert reply["id"].startswith("msg_") and reply["model"] == "claude"
    assert reply["content"] == [
        {"type": "thinking", "thinking": THOUGHT, "signature": "sig"},
        {"type": "text", "text": ANSWER}]
    assert reply["stop_reason"] == "end_turn" and reply["stop_sequence"] is None
    assert reply["usage"] == {"input_tokens": len(json.dumps(MESSAGES)) // 4,
                              "output_tokens": len(ANSWER) // 4 + 1}


def test_anthropic_stream(server):
    status, headers, data = post(server.base + "/v1/messages",
                                 {"model": "claude", "max_tokens": 100, "stream": True,
                                  "messages": MESSAGES})
    assert status == 200 and headers["Content-Type"] == "text/event-stream"
    events, _ = parse_sse(data.decode())
    parsed = [(name, json.loads(payload)) for name, payload in events]
    assert all(name == value["type"] for name, value in parsed)
    names = [name for name, _ in parsed]
    assert names[:3] == ["message_start", "ping", "content_block_start"]
    assert names[-2:] == ["message_delta", "message_stop"]
    start = parsed[0][1]["message"]
    assert start["content"] == [] and start["usage"]["output_tokens"] == 1
    blocks, reasoning, text, signature = {}, "", "", None
    for name, value in parsed:
        if name == "content_block_start":
            blocks[value["index"]] = value["content_block"]["type"]
        elif name == "content_block_delta":
            delta = value["delta"]
            if delta["type"] == "thinking_delta":
                assert blocks[value["index"]] == "thinking"
                reasoning += delta["thinking"]
            elif delta["type"] == "signature_delta":
                signature = delta["signature"]
            else:
                assert delta["type"] == "text_delta" and blocks[value["index"]] == "text"
                text += delta["text"]
    assert blocks == {0: "thinking", 1: "text"}
    assert (reasoning, text, signature) == (THOUGHT, ANSWER, "sig")
    assert names.count("content_block_stop") == 2
    final = parsed[-2][1]
    assert final["delta"] == {"stop_reason": "end_turn", "stop_sequence": None}
    assert final["usage"] == {"output_tokens": len(ANSWER) // 4 + 1}


# --- errors and misbehaviour --------------------------------------------------------------------


def test_rate_limit_with_retry_after(server):
    status, headers, data = post(server.base + "/v1/chat/completions",
                                 {"model": "rate", "messages": MESSAGES})
    assert status == 429 and headers["Retry-After"] == "7"
    error = json.loads(data)["error"]
    assert {"message", "type", "code"} <= set(error)
    status, headers, data = post(server.base + "/v1/messages",
                                 {"model": "rate", "messages": MESSAGES, "stream": True})
    assert status == 429 and headers["Retry-After"] == "7"
    assert json.loads(data) == {"type": "error", "error": {
        "type": "rate_limit_error", "message": "fake server: status 429"}}


def test_server_error_and_custom_body(server):
    status, _, data = post(server.base + "/v1/chat/completions",
                           {"model": "broken", "messages": MESSAGES})
    assert status == 500 and json.loads(data)["error"]["type"] == "server_error"
    status, headers, data = post(server.base + "/v1/messages",
                                 {"model": "custom", "messages": MESSAGES})
    assert (status, data, headers["X-Extra"]) == (503, b'{"oops": true}', "yes")


def test_drop(server):
    assert raw_exchange(server.port, "POST", "/v1/chat/completions",
                        {"model": "drop", "messages": MESSAGES}) == b""


def test_drop_after_chunks(server):
    data = raw_exchange(server.port, "POST", "/v1/chat/completions",
                        {"model": "cut", "messages": MESSAGES, "stream": True})
    head, _, rest = data.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200")
    assert b"transfer-encoding: chunked" in head.lower()
    payload, complete = dechunk(rest)
    assert not complete
    events, _ = parse_sse(payload.decode())
    assert len(events) == 3
    deltas = [json.loads(payload)["choices"][0]["delta"] for _, payload in events]
    assert deltas[1:] == [{"content": "abcd"}, {"content": "efgh"}]


def test_delay_times_out_a_short_client(server):
    started = time.monotonic()
    with pytest.raises((TimeoutError, urllib.error.URLError)):
        post(server.base + "/v1/chat/completions", {"model": "slow", "messages": MESSAGES},
             timeout=0.2)
    assert time.monotonic() - started < 0.7
    # The delayed answer then goes to a closed connection; the server carries on.
    time.sleep(max(0.0, started + 1.0 - time.monotonic()))
    status, _, _ = post(server.base + "/v1/chat/completions",
                        {"model": "plain", "messages": MESSAGES})
    assert status == 200
    assert "Traceback" not in server.stderr_path.read_text()


def test_malformed(server):
    status, _, data = post(server.base + "/v1/chat/completions",
                           {"model": "bad", "messages": MESSAGES})
    assert status == 200
    with pytest.raises(ValueError):
        json.loads(data)
    status, _, data = post(server.base + "/v1/messages",
                           {"model": "bad", "messages": MESSAGES, "stream": True})
    assert status == 200
    events, _ = parse_sse(data.decode())
    bad = 0
    for _, payload in events:
        try:
            json.loads(payload)
        except ValueError:
            bad += 1
    assert bad == 1


def test_health_unknown_path_and_no_rule(fresh):
    running = fresh([{"match": {"model": "only"}, "text": "x"}])
    with urllib.request.urlopen(running.base + "/health", timeout=5) as response:
        assert (response.status, response.read()) == (200, b"ok")
    status, _, data = post(running.base + "/v1/embeddings", {"model": "only"})
    assert status == 404 and "error" in json.loads(data)
    status, _, data = post(running.base + "/v1/chat/completions", {"model": "other"})
    assert status == 500 and "no rule matched" in json.loads(data)["error"]["message"]
    status, _, data = post(running.base + "/v1/messages", {"model": "other"})
    assert status == 500 and json.loads(data)["type"] == "error"


# --- rule selection and the log -----------------------------------------------------------------


def test_times_and_first_match(fresh):
    running = fresh([
        {"match": {"path_suffix": "messages"}, "text": "anthropic"},
        {"times": 2, "status": 429},
        {"match": {"stream": True}, "text": "streamed"},
        {"text": "fallback"},
    ])
    url = running.base + "/v1/chat/completions"
    statuses = [post(url, {"model": "m", "messages": MESSAGES})[0] for _ in range(3)]
    assert statuses == [429, 429, 200]
    reply = json.loads(post(url, {"model": "m", "messages": MESSAGES})[2])
    assert reply["choices"][0]["message"]["content"] == "fallback"
    reply = json.loads(post(running.base + "/v1/messages", {"model": "m"})[2])
    assert reply["content"][0]["text"] == "anthropic"
    _, _, data = post(url, {"model": "m", "messages": MESSAGES, "stream": True})
    assert "streamed" in data.decode()
    assert [entry["rule"] for entry in running.entries()] == [1, 1, 3, 3, 0, 2]


def test_contains(fresh):
    running = fresh([
        {"match": {"contains": "naïve", "not_contains": "forbidden"}, "text": "unicode"},
        {"match": {"contains": "from the system"}, "text": "system"},
        {"text": "other"},
    ])

    def answer(body):
        return json.loads(post(running.base + "/v1/messages", body)[2])["content"][0]["text"]

    def user(text):
        return [{"role": "user", "content": text}]

    assert answer({"model": "m", "messages": user("a naïve kernel")}) == "unicode"
    assert answer({"model": "m", "messages": user("naïve but forbidden")}) == "other"
    assert answer({"model": "m", "system": "words from the system", "messages": user("x")}) \
        == "system"
    assert answer({"model": "m", "system": [{"type": "text", "text": "from the system"}],
                   "messages": user("x")}) == "system"
    assert answer({"model": "m", "messages": user("plain")}) == "other"


def test_request_log(fresh):
    running = fresh([{"match": {"model": "a"}, "text": "x"}, {"text": "y"}])
    post(running.base + "/v1/chat/completions", {"model": "a", "messages": MESSAGES},
         {"Authorization": "Bearer secret-key"})
    post(running.base + "/v1/messages", {"model": "b", "messages": MESSAGES},
         {"x-api-key": "anthropic-key", "anthropic-version": "2023-06-01"})
    request = urllib.request.Request(running.base + "/v1/chat/completions", data=b"not json",
                                     method="POST")
    urllib.request.urlopen(request, timeout=5).close()
    urllib.request.urlopen(running.base + "/health", timeout=5).close()
    entries = running.entries()
    assert [entry["n"] for entry in entries] == [0, 1, 2, 3]
    first, second, third, fourth = entries
    assert (first["method"], first["path"], first["rule"]) == ("POST", "/v1/chat/completions", 0)
    assert first["headers"]["authorization"] == "Bearer secret-key"
    assert first["body"] == {"model": "a", "messages": MESSAGES}
    assert second["headers"]["x-api-key"] == "anthropic-key"
    assert second["headers"]["anthropic-version"] == "2023-06-01"
    assert (second["path"], second["rule"]) == ("/v1/messages", 1)
    assert (third["body"], third["rule"]) == ({"raw": "not json"}, 1)
    assert (fourth["method"], fourth["path"], fourth["rule"]) == ("GET", "/health", None)
