"""Every rule id kbench's C++ code or its analyzer reports is in the one rule table
(src/integrity/rules.cpp), so that `kbench rules` lists it and --allow/--deny know it."""

import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).parents[2]
sys.path.insert(0, str(ROOT / "src" / "integrity" / "analyzer"))

import kbench_analyzer  # noqa: E402

TABLE = set(re.findall(r'\{"([a-z_]+)", "(?:static|runtime|judge|record)"',
                       (ROOT / "src" / "integrity" / "rules.cpp").read_text()))
# A finding made in C++: {"rule", "warn"|"reject"|severity..., or an integrity fault's rule.
FINDING = re.compile(r'\{"([a-z_]+)",\s*(?:"(?:warn|reject)"|[a-z_.]*rules\.severity\()')
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
    assert not missing, f"rule ids outside src/integrity/rules.cpp's table: {missing}"


def test_every_rule_the_analyzer_reports_is_in_the_table():
    missing = sorted(set(kbench_analyzer.RULES) - TABLE)
    assert not missing, f"the analyzer's rules outside src/integrity/rules.cpp's table: {missing}"


def test_every_static_rule_of_the_table_is_the_analyzers_or_kbenchs_own():
    static = set(re.findall(r'\{"([a-z_]+)", "static"',
                            (ROOT / "src" / "integrity" / "rules.cpp").read_text()))
    # kbench itself reports these two about the analyzer's run: it failed, or it was not run.
    assert static - set(kbench_analyzer.RULES) == {"oversized", "unanalyzable"}
