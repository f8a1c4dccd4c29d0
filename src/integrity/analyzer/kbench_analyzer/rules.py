"""The rule ids a finding can name (RULES, the static rules of rules.json, kbench's one rule
table), the analyzer's limits, and the report of findings (Report).
"""

import json
import os


MAX_FINDINGS = 200
STACK_BYTES = 256 << 20          # the command line's analysis thread (deeply nested sources)
DEEP_RECURSION_LIMIT = 100000
EVIDENCE_CHARS = 160
REASON_CHARS = 400
MAX_NATIVE_TEXT = 8 << 20        # characters of all native source texts of a file together
MAX_NATIVE_UNITS = 2000          # native source texts of a file (each has a fixed cost)


class AnalysisLimit(Exception):
    """The source needs more work than the analyzer allows (honest files are far below it).

    Not caught by analyze: like an error of the analyzer, it makes the command exit 1, so that
    the candidate is reported unanalyzable (rejected) in seconds rather than after a timeout.
    """

def _static_rules():
    """The static rules of kbench's one rule table (rules.json beside this file), by id."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "rules.json")
    with open(path, encoding="utf-8") as table:
        rules = json.load(table)["rules"]
    return {rule["id"]: rule["finds"] for rule in rules if rule["kind"] == "static"}


RULES = _static_rules()


def one_line(text, limit):
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


class Report:
    """Findings, de-duplicated by (rule, line); reasons of merged findings are joined."""

    def __init__(self, lines):
        self.lines = lines
        self.items = {}

    def line_text(self, line):
        if 1 <= line <= len(self.lines):
            return self.lines[line - 1].strip()[:EVIDENCE_CHARS]
        return ""

    def add(self, rule, line, reason):
        if rule not in RULES:
            # A rule outside the table: the analyzer's fault, which kbench reports unanalyzable.
            raise ValueError(f"rule {rule!r} is not in rules.json")
        line = int(line or 0)
        reason = one_line(reason, REASON_CHARS)
        key = (rule, line)
        item = self.items.get(key)
        if item is not None:
            if reason not in item["reason"] and len(item["reason"]) + len(reason) < REASON_CHARS:
                item["reason"] += "; " + reason
            return
        self.items[key] = {"rule": rule, "line": line, "evidence": self.line_text(line),
                           "reason": reason}

    def findings(self):
        out = sorted(self.items.values(), key=lambda f: (f["line"], f["rule"]))
        return out[:MAX_FINDINGS]
