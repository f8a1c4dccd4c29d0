"""KernelBench's greedy-eval analysis numbers (tests/python/kernelbench_analysis.py).

The expected numbers are worked out by hand from the fixtures in tests/fixtures/analysis/:

eval_results.json (level 1), sample 0 of each problem (baseline mean / runtime):
  1  correct, 3.0 / 1.5  = 2.0   (exactly 2: not faster than p = 2.0; its sample 1 is ignored)
  2  correct, 4.0 / 1.0  = 4.0
  3  correct, 2.5 / 2.0  = 1.25
  4  correct, 2.5 / 4.0  = 0.625 (slower)
  5  correct, 1.5 / 1.5  = 1.0   (equal: not faster than p = 1.0)
  6  not compiled, not correct
  7  compiled, not correct
  8  only a sample 1 entry (correct): counts as not compiled, not correct
  9  correct, runtime 0.5, but no baseline entry: counted as correct, not aligned
  10 and up: no entry
baseline.json: problems 1-8 and 10-12 (not 9).

edge/eval_results.json: 2 correct (4.0 / 1.0 = 4.0); 10 correct with runtime -1.0 (its timing
failed: 2.0 / -1.0 = -2.0); 101, not a level 1 problem, compiled and correct.

bench/analysis/compare.sh runs KernelBench's own script on the same files; it gave the same
numbers (bench/2026-12-02-cpu2/analysis/README.md).
"""

import json
import math
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import kernelbench_analysis as ka  # noqa: E402

FIXTURES = os.path.join(HERE, "..", "fixtures", "analysis")
EVAL_RESULTS = json.load(open(os.path.join(FIXTURES, "eval_results.json")))
EDGE_RESULTS = json.load(open(os.path.join(FIXTURES, "edge", "eval_results.json")))
BASELINE = json.load(open(os.path.join(FIXTURES, "baseline.json")))
JSONL = os.environ.get("KBENCH_KERNELBENCH_JSONL") or os.path.join(
    HERE, "..", "..", "..", "shared", "kernelbench", "kernelbench.jsonl")

NAMES = {
    1: "1_Square_matrix_multiplication_.py",
    2: "2_Standard_matrix_multiplication_.py",
    3: "3_Batched_matrix_multiplication.py",
    4: "4_Matrix_vector_multiplication_.py",
    5: "5_Matrix_scalar_multiplication.py",
    6: "6_Matmul_with_large_K_dimension_.py",
    7: "7_Matmul_with_small_K_dimension_.py",
    8: "8_Matmul_with_irregular_shapes_.py",
    9: "9_Tall_skinny_matrix_multiplication_.py",
    10: "10_3D_tensor_matrix_multiplication.py",
    11: "11_4D_tensor_matrix_multiplication.py",
    12: "12_Matmul_with_diagonal_matrices_.py",
}
P_KEYS = ["0.0", "0.5", "0.8", "1.0", "1.5", "2.0"]


def problems(ids):
    return [(i, NAMES[i]) for i in ids]


def real_level(level):
    if not os.path.exists(JSONL):
        pytest.skip("no KernelBench problem set here (set KBENCH_KERNELBENCH_JSONL)")
    return ka.level_problems(JSONL, level)


def check(got, want):
    assert set(got) == set(want)
    for key in ["total_count", "total_eval", "compiled_count", "correct_count"]:
        assert got[key] == want[key], key
    for key in ["compilation_rate", "correctness_rate", "geo_mean_speedup"]:
        if math.isnan(want[key]):
            assert math.isnan(got[key]), key
        else:
            assert got[key] == pytest.approx(want[key], rel=1e-12, abs=1e-15), key
    assert list(got["fast_p"]) == P_KEYS
    for p in P_KEYS:
        assert got["fast_p"][p] == pytest.approx(want["fast_p"][p], rel=1e-12, abs=1e-15), p


# The correct aligned speedups of the fixture: 2.0, 4.0, 1.25, 0.625, 1.0.
GEO_MEAN = (2.0 * 4.0 * 1.25 * 0.625 * 1.0) ** (1 / 5)  # = 6.25 ** 0.2


def fixture_fast_p(n):
    return {
        "0.0": 5 / n,  # all five
        "0.5": 5 / n,  # all five (0.625 > 0.5)
        "0.8": 4 / n,  # not 0.625
        "1.0": 3 / n,  # 2.0, 4.0, 1.25: not 1.0 (strict >)
        "1.5": 2 / n,  # 2.0, 4.0
        "2.0": 1 / n,  # 4.0 only: not 2.0 (strict >)
    }


def test_synthetic_level_of_ten_problems():
    got = ka.analyze(EVAL_RESULTS, BASELINE, 1, problems(range(1, 11)))
    check(got, {
        "total_count": 10,         # problems 1-10
        "total_eval": 9,           # keys 1-9, 8 included (it has only sample 1)
        "compiled_count": 7,       # 1, 2, 3, 4, 5, 7, 9
        "correct_count": 6,        # 1, 2, 3, 4, 5, 9
        "compilation_rate": 7 / 10,
        "correctness_rate": 6 / 10,
        "geo_mean_speedup": GEO_MEAN,
        "fast_p": fixture_fast_p(9),  # aligned: 1-8 and 10 (9 has no baseline entry)
    })
    assert GEO_MEAN == pytest.approx(1.4426999059072136, rel=1e-15)


def test_keys_outside_the_level_still_count_as_compiled_and_correct():
    # Problem 9 is not a problem of this level, but its key in the eval results is still
    # counted by total_eval, compiled_count and correct_count (and not by total_count).
    got = ka.analyze(EVAL_RESULTS, BASELINE, 1, problems([1, 2, 3, 4, 5, 6, 7, 8, 10, 11]))
    check(got, {
        "total_count": 10,
        "total_eval": 9,
        "compiled_count": 7,       # 9 included
        "correct_count": 6,        # 9 included
        "compilation_rate": 7 / 10,
        "correctness_rate": 6 / 10,
        "geo_mean_speedup": GEO_MEAN,
        "fast_p": fixture_fast_p(10),  # aligned: 1-8, 10, 11
    })


def test_real_level_1():
    level = real_level(1)
    assert len(level) == 100
    assert level[0] == (1, "1_Square_matrix_multiplication_.py")
    got = ka.analyze(EVAL_RESULTS, BASELINE, 1, level)
    check(got, {
        "total_count": 100,        # every level 1 problem, evaluated or not
        "total_eval": 9,
        "compiled_count": 7,
        "correct_count": 6,
        "compilation_rate": 7 / 100,
        "correctness_rate": 6 / 100,
        "geo_mean_speedup": GEO_MEAN,
        "fast_p": fixture_fast_p(11),  # aligned: the 11 problems with a baseline entry
    })


def test_real_level_1_edge_cases():
    got = ka.analyze(EDGE_RESULTS, BASELINE, 1, real_level(1))
    check(got, {
        "total_count": 100,
        "total_eval": 3,           # 2, 10, 101
        "compiled_count": 3,       # 101 too, though level 1 has no problem 101
        "correct_count": 3,
        "compilation_rate": 3 / 100,
        "correctness_rate": 3 / 100,
        # correct aligned speedups 4.0 and -2.0: (-8.0) ** (1 / 2) is not real: NaN
        "geo_mean_speedup": math.nan,
        # only 4.0 is faster than any p; -2.0 never is; 11 aligned
        "fast_p": {p: 1 / 11 for p in P_KEYS},
    })


def entry(sample_id=0, compiled=True, correct=True, runtime=1.0):
    return {"sample_id": sample_id, "compiled": compiled, "correctness": correct,
            "metadata": {}, "runtime": runtime, "runtime_stats": {}}


def test_nothing_correct_gives_zero_geo_mean():
    results = {"1": [entry(correct=False, runtime=-1.0)]}
    got = ka.analyze(results, BASELINE, 1, problems([1, 2]))
    check(got, {
        "total_count": 2, "total_eval": 1, "compiled_count": 1, "correct_count": 0,
        "compilation_rate": 1 / 2, "correctness_rate": 0 / 2,
        "geo_mean_speedup": 0.0,
        "fast_p": {p: 0 / 2 for p in P_KEYS},
    })


def test_no_baseline_entry_gives_zeros():
    # Problem 9 has no baseline entry: nothing is aligned (n = 0), fast_p is 0 by definition.
    results = {"9": [entry(runtime=0.5)]}
    got = ka.analyze(results, BASELINE, 1, problems([9]))
    check(got, {
        "total_count": 1, "total_eval": 1, "compiled_count": 1, "correct_count": 1,
        "compilation_rate": 1.0, "correctness_rate": 1.0,
        "geo_mean_speedup": 0.0,
        "fast_p": {p: 0.0 for p in P_KEYS},
    })


def test_one_negative_speedup_alone_is_its_own_geo_mean():
    # A single correct entry with runtime -1.0: (3.0 / -1.0) ** (1 / 1) = -3.0.
    results = {"1": [entry(runtime=-1.0)]}
    got = ka.analyze(results, BASELINE, 1, problems([1]))
    assert got["geo_mean_speedup"] == -3.0
    assert got["fast_p"] == {p: 0.0 for p in P_KEYS}


def test_zero_runtime_is_an_infinite_speedup():
    results = {"1": [entry(runtime=0.0)], "2": [entry(runtime=1.0)]}
    got = ka.analyze(results, BASELINE, 1, problems([1, 2]))
    assert got["geo_mean_speedup"] == math.inf  # (inf * 4.0) ** 0.5
    assert got["fast_p"] == {p: 2 / 2 for p in P_KEYS}


def test_compiled_and_correct_are_counted_separately():
    # The counts read the flags as they are: a correct entry marked not compiled counts as
    # correct and not compiled.
    results = {"2": [entry(compiled=False, correct=True, runtime=2.0)]}
    got = ka.analyze(results, BASELINE, 1, problems([2]))
    assert (got["compiled_count"], got["correct_count"]) == (0, 1)
    assert got["geo_mean_speedup"] == 4.0 / 2.0
    assert got["fast_p"]["1.5"] == 1 / 1 and got["fast_p"]["2.0"] == 0 / 1


def test_two_sample_zero_entries_are_an_error():
    results = {"1": [entry(), entry()]}
    with pytest.raises(AssertionError):
        ka.analyze(results, BASELINE, 1, problems([1]))


def test_a_level_missing_from_the_baseline_is_an_error():
    with pytest.raises(KeyError):
        ka.analyze(EVAL_RESULTS, BASELINE, 2, problems([1]))


def test_command_line():
    if not os.path.exists(JSONL):
        pytest.skip("no KernelBench problem set here (set KBENCH_KERNELBENCH_JSONL)")
    out = subprocess.run(
        [sys.executable, os.path.join(HERE, "kernelbench_analysis.py"),
         "--eval-results", os.path.join(FIXTURES, "eval_results.json"),
         "--baseline", os.path.join(FIXTURES, "baseline.json"),
         "--level", "1", "--problems-jsonl", JSONL],
        check=True, capture_output=True, text=True).stdout
    check(json.loads(out), {
        "total_count": 100, "total_eval": 9, "compiled_count": 7, "correct_count": 6,
        "compilation_rate": 7 / 100, "correctness_rate": 6 / 100,
        "geo_mean_speedup": GEO_MEAN,
        "fast_p": fixture_fast_p(11),
    })
