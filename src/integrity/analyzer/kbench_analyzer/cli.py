"""The command line: one JSON request on stdin, the report on stdout (see the package's
docstring for the exit statuses), analyzed in a thread with a large stack.
"""

import json
import sys
import threading

from .analysis import analyze
from .rules import DEEP_RECURSION_LIMIT, RULES, STACK_BYTES, AnalysisLimit


def run_with_deep_stack(function):
    """function() in a thread with a large stack: deeply nested code recurses deeply."""
    box = {}

    def target():
        try:
            box["value"] = function()
        except BaseException as error:      # re-raised in the calling thread
            box["error"] = error

    try:
        previous = threading.stack_size(STACK_BYTES)
    except (ValueError, RuntimeError):
        return function()
    try:
        worker = threading.Thread(target=target)
        worker.start()
        worker.join()
    finally:
        threading.stack_size(previous)
    if "error" in box:
        raise box["error"]
    return box["value"]


def main(argv):
    if "--rules" in argv[1:]:
        sys.stdout.write(json.dumps(RULES, indent=2, sort_keys=True) + "\n")
        return 0
    try:
        request = json.loads(sys.stdin.read())
    except (ValueError, UnicodeDecodeError) as error:
        sys.stderr.write("analyzer: stdin is not JSON: %s\n" % error)
        return 2
    if not isinstance(request, dict):
        sys.stderr.write("analyzer: stdin must be a JSON object\n")
        return 2
    source = request.get("source")
    source = source if isinstance(source, str) else ""
    backend = str(request.get("backend") or "")
    precision = str(request.get("precision") or "fp32")
    sys.setrecursionlimit(max(sys.getrecursionlimit(), DEEP_RECURSION_LIMIT))
    try:
        result = run_with_deep_stack(lambda: analyze(source, backend, precision, True))
    except AnalysisLimit as error:
        sys.stderr.write("analyzer: the source cannot be analyzed in time: %s\n" % error)
        return 1
    sys.stdout.write(json.dumps(result) + "\n")
    return 0
