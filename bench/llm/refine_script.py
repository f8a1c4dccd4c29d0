"""Writes a scripted model server's rules (tests/llm/fake_llm_server.py) for a refinement over
the built-in suite's level 1 problems: each problem's first answer has no code, its next ones are
the suite's candidate for it; every answer takes DELAY seconds, as a model's would.

    python3 bench/llm/refine_script.py BACKEND DELAY > script.json
"""
import json
import pathlib
import sys

root = pathlib.Path(__file__).resolve().parents[2]
backend, delay = sys.argv[1], float(sys.argv[2])
rules = []
for problem in sorted((root / "suite/problems/level1").glob("*.py")):
    pid = int(problem.name.split("_")[0])
    candidate = root / f"suite/candidates/{backend}/level_1_problem_{pid}_sample_0_kernel.py"
    if not candidate.exists():
        continue
    # The problem's own reference source tells its requests apart.
    marker = json.dumps(problem.read_text())[1:-1]
    rules.append({"match": {"contains": marker}, "times": 1, "delay_s": delay,
                  "text": "Let me first think about the memory layout of this operator."})
    rules.append({"match": {"contains": marker}, "delay_s": delay,
                  "text": "Here it is:\n```python\n" + candidate.read_text() + "```\n"})
print(json.dumps({"rules": rules}))
