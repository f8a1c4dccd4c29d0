"""Every rule id kbench's C++ code or its analyzer reports is in the one rule table
(src/integrity/analyzer/kbench_analyzer/rules.json, compiled into kbench and read by the
analyzer), so that `kbench rules` lists it and --allow/--deny know it."""

import json
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).parents[2]
sys.path.insert(0, str(ROOT / "src" / "integrity" / "analyzer"))

import kbench_analyzer  # noqa: E402

RULES = json.loads((ROOT / "src" / "integrity" / "analyzer" / "kbench_analyzer" /
                    "rules.json").read_text())["rules"]
TABLE = {rule["id"] for rule in RULES}
# A finding made in C++: {"rule", Severity::warn|reject|a policy's severity(...), or an integrity fault's rule.
FINDING = re.compile(r'\{"([a-z_]+)",\s*(?:Severity::(?:warn|reject)|[a-z_.]*(?:rules|policy)\.severity\()')
FAULT = re.compile(r'FaultKind::integrity,')
RULE_ID = re.compile(r'"([a-z]+_[a-z_]+)"')


def call_arguments(text, start):
    """The text from start to the parenthesis that closes the call start is in."""
    depth, i = 1, start
    while i < len(text) and depth:
        if text[i] == '"':  # a string literal: to its closing quote
            i += 1
            while text[i] != '"':
                i += 2 if text[i] == "\\" else 1
        elif text[i] in "([{":
            depth += 1
        elif text[i] in ")]}":
            depth -= 1
        i += 1
    return text[start:i]


def test_the_table_is_not_empty():
    assert {"no_kernel_call", "decoy_kernel", "signalled_kbench", "worker_died"} <= TABLE


def test_every_rule_the_cpp_code_reports_is_in_the_table():
    used = {}
    for path in (ROOT / "src").rglob("*.cpp"):
        text = path.read_text()
        for match in FINDING.finditer(text):
            used.setdefault(match.group(1), path.relative_to(ROOT))
        for match in FAULT.finditer(text):
            ids = RULE_ID.findall(call_arguments(text, match.end()))  # the rule: its last id
            if ids:
                used.setdefault(ids[-1], path.relative_to(ROOT))
    assert len(used) >= 15
    missing = {rule: str(where) for rule, where in used.items() if rule not in TABLE}
    assert not missing, f"rule ids outside the rule table (rules.json): {missing}"


def test_the_analyzer_knows_exactly_the_static_rules_of_the_table():
    assert set(kbench_analyzer.RULES) == {r["id"] for r in RULES if r["kind"] == "static"}


def test_the_analyzer_refuses_to_report_a_rule_outside_the_table():
    report = kbench_analyzer.Report(["x = 1"])
    report.add("torch_compute", 1, "a PyTorch op")
    try:
        report.add("made_up_rule", 1, "?")
    except ValueError as e:
        assert "made_up_rule" in str(e)
    else:
        raise AssertionError("a rule outside the table was reported")
    assert [f["rule"] for f in report.findings()] == ["torch_compute"]
