#!/usr/bin/env python3
"""A scripted stand-in for language-model APIs, served over HTTP on loopback.

It answers OpenAI chat completions (POST .../chat/completions) and Anthropic messages
(POST .../messages), as JSON or as server-sent events, following the rules of a script, and it
can misbehave on command (error statuses, Retry-After, delays, dropped connections, truncated
streams, malformed bodies). Every request is appended to a log in JSON lines. tests/llm/README.md
describes the script format.

    python3 tests/llm/fake_llm_server.py --script SCRIPT.json --log REQUESTS.jsonl \
        [--port 0] [--host 127.0.0.1]

Once bound it prints one line, `PORT <n>`, to stdout, then serves until SIGTERM or SIGINT.
Python 3.11 standard library only.
"""

import argparse
import http.server
import json
import os
import signal
import socket
import sys
import threading
import time

# A client that went away: BrokenPipeError, ConnectionResetError, TimeoutError, ... are OSErrors.
CONNECTION_ERRORS = (OSError,)

OPENAI = "openai"
ANTHROPIC = "anthropic"

OPENAI_ERROR_TYPES = {
    400: ("invalid_request_error", None),
    401: ("invalid_request_error", "invalid_api_key"),
    403: ("permission_error", None),
    404: ("invalid_request_error", "model_not_found"),
    429: ("requests", "rate_limit_exceeded"),
    500: ("server_error", None),
    503: ("server_error", "service_unavailable"),
}
ANTHROPIC_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}

MALFORMED_JSON = {
    OPENAI: '{"id": "x", "choices": [',
    ANTHROPIC: '{"id": "msg_x", "type": "message", "content": [',
}


class ScriptError(Exception):
    pass


# --- script -------------------------------------------------------------------------------------


def load_script(path):
    """The rules of a script file, each with "text" resolved from "text_file"."""
    with open(path, encoding="utf-8") as handle:
        script = json.load(handle)
    if not isinstance(script, dict) or not isinstance(script.get("rules"), list):
        raise ScriptError(f"{path}: expected an object with a list \"rules\"")
    folder = os.path.dirname(os.path.abspath(path))
    rules = []
    for index, rule in enumerate(script["rules"]):
        if not isinstance(rule, dict):
            raise ScriptError(f"{path}: rule {index} is not an object")
        rule = dict(rule)
        if "match" in rule and not isinstance(rule["match"], dict):
            raise ScriptError(f"{path}: rule {index}: \"match\" is not an object")
        if "text_file" in rule:
            text_path = os.path.join(folder, rule["text_file"])
            try:
                with open(text_path, encoding="utf-8") as handle:
                    rule["text"] = handle.read()
            except OSError as error:
                raise ScriptError(f"{path}: rule {index}: {error}") from error
        rules.append(rule)
    return rules


def searchable_text(body):
    """The messages (and system prompt) of a request, as "contains" sees them."""
    parts = [json.dumps(body.get("messages"), ensure_ascii=False)]
    system = body.get("system")
    if isinstance(system, str):
        parts.append(system)
    elif system is not None:
        parts.append(json.dumps(system, ensure_ascii=False))
    return "\n".join(parts)


def rule_matches(match, route, body):
    if "path_suffix" in match and not route.endswith(match["path_suffix"]):
        return False
    if "model" in match and body.get("model") != match["model"]:
        return False
    if "stream" in match and bool(body.get("stream", False)) != bool(match["stream"]):
        return False
    if "contains" in match or "not_contains" in match:
        text = searchable_text(body)
        if "contains" in match and match["contains"] not in text:
            return False
        if "not_contains" in match and match["not_contains"] in text:
            return False
    return True


class State:
    """The rules, their use counts and the request log, shared by all handler threads."""

    def __init__(self, rules, log_path):
        self.rules = rules
        self.uses = [0] * len(rules)
        self.count = 0
        self.lock = threading.Lock()
        self.log = open(log_path, "a", encoding="utf-8")

    def record(self, method, path, headers, body, route, choose):
        """Picks a rule (when `choose`), logs the request; returns (index, rule, n)."""
        with self.lock:
            chosen = None
            if choose:
                for index, rule in enumerate(self.rules):
                    times = rule.get("times")
                    if times is not None and self.uses[index] >= times:
                        continue
                    if rule_matches(rule.get("match", {}), route, body):
                        chosen = index
                        self.uses[index] += 1
                        break
            n = self.count
            self.count += 1
            entry = {"n": n, "method": method, "path": path, "headers": headers,
                     "body": body, "rule": chosen}
            self.log.write(json.dumps(entry, ensure_ascii=False) + "\n")
            self.log.flush()
        return chosen, (None if chosen is None else self.rules[chosen]), n


# --- responses ----------------------------------------------------------------------------------


def pieces(text, size):
    return [text[i:i + size] for i in range(0, len(text), size)]


def usage_counts(rule, body, text):
    usage = rule.get("usage") or {}
    messages = body.get("messages")
    prompt = usage.get("input", len(json.dumps(messages)) // 4)
    completion = usage.get("output", len(text) // 4 + 1)
    return int(prompt), int(completion)


def error_body(provider, status, message):
    if provider == ANTHROPIC:
        kind = ANTHROPIC_ERROR_TYPES.get(status, "api_error")
        return {"type": "error", "error": {"type": kind, "message": message}}
    kind, code = OPENAI_ERROR_TYPES.get(
        status, ("invalid_request_error" if status < 500 else "server_error", None))
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


def openai_json(rule, body, n):
    text = rule.get("text", "")
    message = {"role": "assistant", "content": text}
    if rule.get("reasoning"):
        message["reasoning_content"] = rule["reasoning"]
    prompt, completion = usage_counts(rule, body, text)
    return {
        "id": f"chatcmpl-{n}", "object": "chat.completion", "created": int(time.time()),
        "model": body.get("model"),
        "choices": [{"index": 0, "message": message,
                     "finish_reason": rule.get("finish_reason", "stop")}],
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                  "total_tokens": prompt + completion},
    }


def anthropic_json(rule, body, n):
    text = rule.get("text", "")
    content = []
    if rule.get("reasoning"):
        content.append({"type": "thinking", "thinking": rule["reasoning"], "signature": "sig"})
    content.append({"type": "text", "text": text})
    prompt, completion = usage_counts(rule, body, text)
    return {
        "id": f"msg_{n}", "type": "message", "role": "assistant", "model": body.get("model"),
        "content": content, "stop_reason": rule.get("finish_reason", "end_turn"),
        "stop_sequence": None,
        "usage": {"input_tokens": prompt, "output_tokens": completion},
    }


def sse(data, event=None):
    payload = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {payload}\n\n"


def openai_events(rule, body, n):
    """The SSE events of a streamed chat completion, as strings."""
    text = rule.get("text", "")
    reasoning = rule.get("reasoning") or ""
    size = max(1, int(rule.get("chunk_chars", 16)))
    options = body.get("stream_options")
    include_usage = isinstance(options, dict) and bool(options.get("include_usage"))
    created = int(time.time())

    def chunk(delta, finish=None):
        data = {"id": f"chatcmpl-{n}", "object": "chat.completion.chunk", "created": created,
                "model": body.get("model"),
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
        if include_usage:
            data["usage"] = None
        return sse(data)

    events = [chunk({"role": "assistant", "content": ""})]
    events += [chunk({"reasoning_content": piece}) for piece in pieces(reasoning, size)]
    events += [chunk({"content": piece}) for piece in pieces(text, size)]
    events.append(chunk({}, rule.get("finish_reason", "stop")))
    if include_usage:
        prompt, completion = usage_counts(rule, body, text)
        events.append(sse({
            "id": f"chatcmpl-{n}", "object": "chat.completion.chunk", "created": created,
            "model": body.get("model"), "choices": [],
            "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                      "total_tokens": prompt + completion}}))
    events.append(sse("[DONE]"))
    return events


def anthropic_events(rule, body, n):
    """The SSE events of a streamed message, as strings."""
    text = rule.get("text", "")
    reasoning = rule.get("reasoning") or ""
    size = max(1, int(rule.get("chunk_chars", 16)))
    prompt, completion = usage_counts(rule, body, text)
    message = {"id": f"msg_{n}", "type": "message", "role": "assistant",
               "model": body.get("model"), "content": [], "stop_reason": None,
               "stop_sequence": None, "usage": {"input_tokens": prompt, "output_tokens": 1}}
    events = [sse({"type": "message_start", "message": message}, "message_start"),
              sse({"type": "ping"}, "ping")]
    index = 0

    def block(start, deltas, index):
        out = [sse({"type": "content_block_start", "index": index, "content_block": start},
                   "content_block_start")]
        out += [sse({"type": "content_block_delta", "index": index, "delta": delta},
                    "content_block_delta") for delta in deltas]
        out.append(sse({"type": "content_block_stop", "index": index}, "content_block_stop"))
        return out

    if reasoning:
        deltas = [{"type": "thinking_delta", "thinking": piece}
                  for piece in pieces(reasoning, size)]
        deltas.append({"type": "signature_delta", "signature": "sig"})
        events += block({"type": "thinking", "thinking": ""}, deltas, index)
        index += 1
    deltas = [{"type": "text_delta", "text": piece} for piece in pieces(text, size)]
    events += block({"type": "text", "text": ""}, deltas, index)
    events.append(sse({"type": "message_delta",
                       "delta": {"stop_reason": rule.get("finish_reason", "end_turn"),
                                 "stop_sequence": None},
                       "usage": {"output_tokens": completion}}, "message_delta"))
    events.append(sse({"type": "message_stop"}, "message_stop"))
    return events


def malformed_event(provider):
    if provider == ANTHROPIC:
        return ('event: content_block_delta\n'
                'data: {"type": "content_block_delta", "index": 0, "delta": {\n\n')
    return 'data: {"id": "x", "object": "chat.completion.chunk", "choices": [{\n\n'


# --- HTTP ---------------------------------------------------------------------------------------


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "fake-llm/1"
    timeout = 120

    def setup(self):
        super().setup()
        try:
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:
            pass

    def log_message(self, *args):
        pass

    def do_GET(self):
        self.dispatch()

    def do_POST(self):
        self.dispatch()

    do_PUT = do_DELETE = do_PATCH = do_HEAD = do_OPTIONS = do_POST

    # -- request --

    def read_body(self):
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            data = bytearray()
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return bytes(data)
                data += self.rfile.read(size)
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def dispatch(self):
        try:
            self.serve()
        except CONNECTION_ERRORS:
            self.close_connection = True

    def serve(self):
        state = self.server.state
        raw = self.read_body()
        text = raw.decode("utf-8", errors="replace")
        try:
            body = json.loads(text)
        except ValueError:
            body = {"raw": text}
        headers = {name.lower(): value for name, value in self.headers.items()}
        route = self.path.split("?", 1)[0].rstrip("/")
        provider = None
        if self.command == "POST" and route.endswith("chat/completions"):
            provider = OPENAI
        elif self.command == "POST" and route.endswith("messages"):
            provider = ANTHROPIC
        fields = body if isinstance(body, dict) else {}
        index, rule, n = state.record(self.command, self.path, headers, body, route,
                                      provider is not None)

        if provider is None:
            if self.command == "GET" and route.endswith("health"):
                self.send_bytes(200, b"ok", "text/plain")
            else:
                self.send_json(404, {"error": {
                    "message": f"no such endpoint: {self.command} {self.path}",
                    "type": "invalid_request_error", "param": None, "code": None}})
            return
        if rule is None:
            self.send_json(500, error_body(provider, 500, "fake server: no rule matched"))
            return
        self.respond(provider, rule, fields, n)

    # -- response --

    def respond(self, provider, rule, body, n):
        delay = float(rule.get("delay_s", 0) or 0)
        if delay > 0:
            time.sleep(delay)
        if rule.get("drop"):
            self.drop()
            return
        status = int(rule.get("status", 200))
        extra = dict(rule.get("headers") or {})
        if "retry_after" in rule:
            extra["Retry-After"] = str(rule["retry_after"])

        if "body" in rule:
            payload = rule["body"]
            if not isinstance(payload, str):
                payload = json.dumps(payload)
            self.send_bytes(status, payload.encode("utf-8"), "application/json", extra)
            return
        if status != 200:
            message = rule.get("error_message", f"fake server: status {status}")
            self.send_json(status, error_body(provider, status, message), extra)
            return
        if body.get("stream"):
            self.stream(provider, rule, body, n, extra)
            return
        if rule.get("malformed"):
            self.send_bytes(200, MALFORMED_JSON[provider].encode(), "application/json", extra)
            return
        build = anthropic_json if provider == ANTHROPIC else openai_json
        self.send_json(200, build(rule, body, n), extra)

    def stream(self, provider, rule, body, n, extra):
        build = anthropic_events if provider == ANTHROPIC else openai_events
        events = build(rule, body, n)
        if rule.get("malformed"):
            events.insert(1, malformed_event(provider))
        if provider == OPENAI:
            events.insert(1, ": keep-alive\n\n")
        cut = rule.get("drop_after_chunks")
        pause = float(rule.get("chunk_delay_s", 0) or 0)

        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        for name, value in extra.items():
            self.send_header(name, str(value))
        self.send_header("Connection", "close")
        self.end_headers()

        sent = 0
        for event in events:
            if cut is not None and sent >= int(cut):
                self.drop()
                return
            if pause > 0 and sent > 0:
                time.sleep(pause)
            data = event.encode("utf-8")
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            if not event.startswith(":"):
                sent += 1
        if cut is not None and sent >= int(cut):
            self.drop()
            return
        self.wfile.write(b"0\r\n\r\n")

    def send_bytes(self, status, data, content_type, extra=None):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for name, value in (extra or {}).items():
            self.send_header(name, str(value))
        self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def send_json(self, status, value, extra=None):
        data = json.dumps(value, ensure_ascii=False).encode("utf-8")
        self.send_bytes(status, data, "application/json", extra)

    def drop(self):
        """Closes the connection at once, with nothing more sent."""
        self.close_connection = True
        try:
            self.wfile.flush()
        except OSError:
            pass
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.connection.close()


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def __init__(self, address, state):
        self.state = state
        super().__init__(address, Handler)

    def handle_error(self, request, client_address):
        error = sys.exc_info()[1]
        if isinstance(error, CONNECTION_ERRORS):
            return
        super().handle_error(request, client_address)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--script", required=True, help="the rules, as JSON")
    parser.add_argument("--log", required=True, help="requests are appended here, JSON lines")
    parser.add_argument("--port", type=int, default=0, help="0 (default): any free port")
    parser.add_argument("--host", default="127.0.0.1")
    args = parser.parse_args(argv)

    try:
        rules = load_script(args.script)
    except (OSError, ValueError, ScriptError) as error:
        print(f"fake_llm_server: {error}", file=sys.stderr)
        return 2
    state = State(rules, args.log)
    server = Server((args.host, args.port), state)

    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    worker = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1},
                              daemon=True)
    worker.start()
    print(f"PORT {server.server_address[1]}", flush=True)
    while not stop.wait(0.25):
        pass
    server.shutdown()
    server.server_close()
    state.log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
