"""KernelBench's greedy-eval analysis, re-implemented in plain Python.

The reference is `scripts/benchmark_eval_analysis.py` (analyze_greedy_eval) with
`kernelbench.score` of the KernelBench harness at commit 423217d. This module computes the same
numbers, with the same quirks, so that kbench's own analysis can be tested against it without
the harness, pydra or numpy:

- only entries with sample_id == 0 are kept; more than one such entry for a problem is an error;
- every problem of the level with no sample-0 entry counts as evaluated, not compiled and not
  correct (runtime -1.0);
- total_count is the number of problems of the level, total_eval the number of keys in the
  eval results as read (a key whose only entries are other samples still counts);
- compiled_count and correct_count count every key of the eval results, including keys that
  are not problems of the level; compiled and correct are counted independently;
- the speedup of a problem is baseline mean / runtime; only problems of the level that have a
  baseline entry are aligned; n is the number aligned (not total_count);
- geo_mean_speedup is (product of the speedups of the correct aligned problems) ** (1 / their
  count), 0.0 when none is correct; a negative product (a correct entry whose runtime is -1.0,
  i.e. timing failed) gives NaN, as numpy's power does;
- fast_p is (correct aligned problems with speedup strictly greater than p) / n, 0.0 when n is
  0, for p in 0.0, 0.5, 0.8, 1.0, 1.5, 2.0, keyed by str(p) ("0.0", "0.5", ...);
- divisions follow IEEE arithmetic as numpy does: x / 0 is +-inf, 0 / 0 is NaN.

Run as a script, it prints the numbers for an eval_results.json, a baseline file and a level,
taking the level's problems from a KernelBench problem set in JSON lines (fields level,
problem_id, name):

    python3 tests/python/kernelbench_analysis.py --eval-results FILE --baseline FILE \
        --level 1 --problems-jsonl ../shared/kernelbench/kernelbench.jsonl
"""

import argparse
import json
import math
import sys

P_VALUES = [0.0, 0.5, 0.8, 1.0, 1.5, 2.0]


def _divide(a, b):
    """a / b as IEEE (and numpy) divide: no exception on a zero divisor."""
    if b == 0:
        if a == 0 or a != a:
            return math.nan
        return math.copysign(math.inf, a) * math.copysign(1.0, b)
    return a / b


def _power(base, exponent):
    """base ** exponent as C pow (numpy's power): NaN where the result is not real."""
    try:
        return math.pow(base, exponent)
    except ValueError:
        return math.nan


def _sample_zero(eval_results):
    kept = {}
    for key, entries in eval_results.items():
        zero = [e for e in entries if e["sample_id"] == 0]
        if len(zero) > 1:
            raise AssertionError("Multiple entries for sample_id = 0")
        if zero:
            kept[key] = zero[0]
    return kept


def analyze(eval_results, baseline, level, problems):
    """The numbers of analyze_greedy_eval.

    eval_results: the parsed eval_results.json (problem id string -> list of sample entries).
    baseline: the parsed baseline file ({"level1": {"<file name>": {"mean": ms, ...}}}).
    level: the level (selects baseline["level<level>"]).
    problems: the level's problems as (problem id, file name) pairs, every problem of the level.
    """
    dataset = {}
    for pid, name in problems:
        dataset[int(pid)] = name
    total_count = len(dataset)
    total_eval = len(eval_results)

    entries = _sample_zero(eval_results)
    for pid in sorted(dataset):
        if str(pid) not in entries:
            entries[str(pid)] = {"sample_id": 0, "compiled": False, "correctness": False,
                                 "metadata": {}, "runtime": -1.0, "runtime_stats": {}}

    compiled_count = sum(1 for e in entries.values() if e["compiled"] == True)  # noqa: E712
    correct_count = sum(1 for e in entries.values() if e["correctness"] == True)  # noqa: E712
    if total_count == 0:
        # The reference prints compiled_count / total_count before anything else.
        raise ZeroDivisionError("the level has no problems")

    level_baseline = baseline[f"level{level}"]
    aligned = []  # (correct, baseline mean, runtime), in problem id order
    for pid in sorted(dataset):
        entry = entries[str(pid)]
        name = dataset[pid]
        if name not in level_baseline:
            continue
        aligned.append((entry["correctness"], level_baseline[name]["mean"], entry["runtime"]))
    n = len(aligned)

    speedups = [_divide(b, r) for correct, b, r in aligned if correct]
    n_correct = len(speedups)
    if n_correct > 0:
        product = 1.0
        for s in speedups:
            product *= s
        geo_mean = _power(product, 1 / n_correct)
    else:
        geo_mean = 0.0

    fast_p = {}
    for p in P_VALUES:
        faster = sum(1 for s in speedups if s > p)
        fast_p[str(p)] = faster / n if n > 0 else 0.0

    return {
        "total_count": total_count,
        "total_eval": total_eval,
        "compiled_count": compiled_count,
        "correct_count": correct_count,
        "compilation_rate": compiled_count / total_count,
        "correctness_rate": correct_count / total_count,
        "geo_mean_speedup": float(geo_mean),
        "fast_p": fast_p,
    }


def level_problems(jsonl_path, level):
    """(problem id, file name) of every problem of a level in a KernelBench problem set.

    The set's `name` has no extension; the harness names a problem by its file name, which is
    what baseline files are keyed by.
    """
    problems = []
    with open(jsonl_path) as f:
        for line in f:
            if not line.strip():
                continue
            row = json.loads(line)
            if int(row["level"]) != int(level):
                continue
            name = row["name"]
            if not name.endswith(".py"):
                name += ".py"
            problems.append((int(row["problem_id"]), name))
    return sorted(problems)


def main(argv=None):
    parser = argparse.ArgumentParser(description="KernelBench's greedy-eval analysis numbers.")
    parser.add_argument("--eval-results", required=True, help="eval_results.json")
    parser.add_argument("--baseline", required=True, help="baseline timing JSON")
    parser.add_argument("--level", required=True, type=int)
    parser.add_argument("--problems-jsonl", required=True,
                        help="KernelBench problem set, one JSON object a line")
    args = parser.parse_args(argv)
    with open(args.eval_results) as f:
        eval_results = json.load(f)
    with open(args.baseline) as f:
        baseline = json.load(f)
    problems = level_problems(args.problems_jsonl, args.level)
    result = analyze(eval_results, baseline, args.level, problems)
    json.dump(result, sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
