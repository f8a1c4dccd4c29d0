"""kbench score and kbench report on a real run: a CPU eval of the built-in suite's level 1,
then its scores and its page from the store alone.

    python3 tests/report/report_test.py KBENCH PYTHON CACHE_DIR OUT_DIR

- score: the same numbers twice (the bootstrap's seed), every format, KernelBench's sample-0 view
  equal to tests/python/kernelbench_analysis.py (an independent re-implementation of KernelBench's
  benchmark_eval_analysis) on the run's own eval_results.json;
- report: opened in headless Chromium (Debian's chromium): no console message at all, the plots
  and the table there, the table sorted and filtered from the address's fragment, a screenshot in
  OUT_DIR; a second run with verdicts changed in its store, side by side (--vs).

Without Chromium the page checks are skipped (exit code 77, which ctest reports as skipped) after
everything else has passed.
"""

import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))
import kernelbench_analysis  # noqa: E402

SKIPPED = 77


def run(args, **kwargs):
    done = subprocess.run(args, capture_output=True, text=True, **kwargs)
    if done.returncode not in kwargs.pop("ok", (0, 1)):
        raise AssertionError(f"{args} exited {done.returncode}:\n{done.stdout}\n{done.stderr}")
    return done


def check(condition, message):
    if not condition:
        raise AssertionError(message)


def chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def browse(browser, page, fragment, out_dir, screenshot=None):
    """The page's DOM after its scripts ran, and every console line Chromium logged."""
    profile = tempfile.mkdtemp(prefix="kbench-chromium-")
    url = "file://" + os.path.abspath(page) + fragment
    base = [browser, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
            "--disable-extensions", "--user-data-dir=" + profile, "--enable-logging=stderr",
            "--v=0", "--window-size=1400,2200"]
    try:
        dom = subprocess.run(base + ["--dump-dom", url], capture_output=True, text=True,
                             timeout=120)
        console = [line for line in dom.stderr.splitlines() if "CONSOLE" in line]
        if screenshot:
            subprocess.run(base + ["--screenshot=" + os.path.join(out_dir, screenshot), url],
                           capture_output=True, text=True, timeout=120)
        return dom.stdout, console
    finally:
        shutil.rmtree(profile, ignore_errors=True)


def table_rows(dom):
    body = re.search(r"<table id=\"problems\">.*?<tbody>(.*?)</tbody>", dom, re.S)
    check(body, "no problem table in the page")
    rows = re.findall(r"<tr>(.*?)</tr>", body.group(1), re.S)
    return [re.findall(r"<td[^>]*>(.*?)</td>", row, re.S) for row in rows]


def main():
    kbench, python, cache, out_dir = sys.argv[1:5]
    os.makedirs(out_dir, exist_ok=True)
    work = tempfile.mkdtemp(prefix="kbench-report-test-")
    runs = os.path.join(work, "runs")
    # Mistakes say what to do.
    for args, words in (([kbench, "score", "--runs-dir", runs, "--run", "absent"], "no run store"),
                        ([kbench, "report", "--runs-dir", runs, "--run", "absent"], "no run store")):
        done = subprocess.run(args, capture_output=True, text=True)
        check(done.returncode == 2 and words in done.stderr and "what to do" in done.stderr,
              f"{args}: {done.returncode} {done.stderr}")
    # A real run: the built-in CPU candidates of level 1, timed briefly.
    eval_args = [kbench, "eval", "--device", "cpu", "--python", python, "--runs-dir", runs,
                 "--cache-dir", cache, "--level", "1", "--max-seconds", "1", "-q"]
    run(eval_args + ["--run", "first"])
    folder = os.path.join(runs, "first")

    # The score: twice the same, from the store alone.
    score = [kbench, "score", "--runs-dir", runs, "--run", "first"]
    a = run(score + ["--format", "json"]).stdout
    b = run(score + ["--format", "json"]).stdout
    check(a == b, "two scores of one store differ")
    scored = json.loads(a)
    check(scored["bootstrap"]["seed"] == 20261202, "the seed is not recorded")
    level = scored["levels"][0]
    problems = level["problems"]
    check(problems >= 3, f"level 1 has {problems} problems")
    for p, share in level["fast_p"].items():
        check(share is None or share["lo"] <= share["value"] <= share["hi"],
              f"fast_{p}'s interval does not hold its value: {share}")
    # Another seed moves the intervals, never the points.
    other_seed = json.loads(run(score + ["--format", "json", "--seed", "5"]).stdout)
    check(other_seed["levels"][0]["fast_p"]["0"]["value"] == level["fast_p"]["0"]["value"],
          "a seed changed a point number")
    for args, words in ((["--p", "1,x"], "--p takes numbers"),
                        (["--baseline", os.path.join(work, "none.json")], "cannot read the baseline")):
        done = subprocess.run(score + args, capture_output=True, text=True)
        check(done.returncode == 2 and words in done.stderr and "what to do" in done.stderr,
              f"{args}: {done.returncode} {done.stderr}")
    for fmt in ("table", "csv", "md"):
        text = run(score + ["--format", fmt]).stdout
        check("fast_1" in text, f"--format {fmt} has no fast_1:\n{text}")

    # A run that timed nothing knows no speedups: fast_p above 0 is not 0%, it is unknown.
    run(eval_args + ["--run", "untimed", "--no-timing"])
    untimed = json.loads(run([kbench, "score", "--runs-dir", runs, "--run", "untimed",
                              "--format", "json"]).stdout)["levels"][0]
    check(untimed["fast_p"]["0"] is not None and untimed["fast_p"]["1"] is None and
          untimed["geomean_speedup"] is None, f"an untimed run's score: {untimed}")

    # KernelBench's view against the independent re-implementation, on the run's own files.
    with open(os.path.join(folder, "eval_results.json")) as f:
        eval_results = json.load(f)
    # Each verdict's own baseline, written as KernelBench's baseline file.
    baseline = {"level1": {}}
    db = sqlite3.connect(os.path.join(folder, "kbench.db"))
    selection = json.loads(db.execute("SELECT value FROM meta WHERE name='selection'").fetchone()[0])
    names = {(p["level"], p["id"]): p["name"] for p in selection["problems"]}
    for (verdict,) in db.execute("SELECT verdict FROM verdicts"):
        v = json.loads(verdict)
        if v.get("baseline"):
            name = names[(v["problem"]["level"], v["problem"]["id"])]
            baseline["level1"][name + ".py"] = {"mean": v["baseline"]["mean_us"] / 1000}
    baseline_file = os.path.join(work, "baseline.json")
    with open(baseline_file, "w") as f:
        json.dump(baseline, f)
    with_file = json.loads(run(score + ["--format", "json", "--baseline", baseline_file]).stdout)
    level_problems = [(k[1], names[k] + ".py") for k in sorted(names) if k[0] == 1]
    expected = kernelbench_analysis.analyze(eval_results, baseline, 1, level_problems)
    mine = with_file["kernelbench_sample0"][0]
    check(mine["total"] == expected["total_count"], f"total {mine} vs {expected}")
    check(mine["correct"] == expected["correct_count"], f"correct {mine} vs {expected}")
    check(abs(mine["geomean_speedup"] - expected["geo_mean_speedup"]) < 1e-9 * max(1, expected["geo_mean_speedup"]),
          f"geomean {mine['geomean_speedup']} vs {expected['geo_mean_speedup']}")
    for p, share in expected["fast_p"].items():
        check(abs(mine["fast_p"][format(float(p), "g")] - share) < 1e-12,
              f"fast_{p}: {mine['fast_p']} vs {expected['fast_p']}")

    # A second run: the first's store with one correct verdict made incorrect.
    second = os.path.join(runs, "second")
    os.makedirs(second)
    shutil.copy(os.path.join(folder, "kbench.db"), os.path.join(second, "kbench.db"))
    db2 = sqlite3.connect(os.path.join(second, "kbench.db"))
    key, verdict = db2.execute("SELECT key, verdict FROM verdicts WHERE status='correct' "
                               "ORDER BY problem_id LIMIT 1").fetchone()
    v = json.loads(verdict)
    v["status"], v["reason"] = "incorrect", "made incorrect for the comparison"
    v["speedup"] = None
    db2.execute("UPDATE verdicts SET status='incorrect', verdict=? WHERE key=?",
                (json.dumps(v), key))
    db2.commit()
    changed_name = names[(v["problem"]["level"], v["problem"]["id"])]

    page = os.path.join(out_dir, "report.html")
    run([kbench, "report", "--runs-dir", runs, "--run", "first", "--vs", "second", "-o", page])
    html = open(page).read()
    check("http://" not in html.replace("http://www.w3.org/2000/svg", "") and "https://" not in html,
          "the page refers to the network")
    check(html.count("<svg") >= 3, "fewer than three plots")
    check(changed_name in html.split("Problems that changed")[1].split("<h2>")[0],
          f"{changed_name} is not among the problems that changed")

    browser = chromium()
    if not browser:
        print("kbench report: no chromium here: the page was not opened (skipped)")
        return SKIPPED
    dom, console = browse(browser, page, "", out_dir, screenshot="report.png")
    check(not console, "console messages:\n" + "\n".join(console))
    rows = table_rows(dom)
    check(len(rows) == problems, f"{len(rows)} rows for {problems} problems")
    check(f"{problems} of {problems} problems" in dom, "the table's count is not shown")
    for plot in ("plot-fast-p", "plot-speedups", "plot-status"):
        check(f"id=\"{plot}\"" in dom, f"no {plot}")
    # Sorted by speedup, descending, from the fragment; filtered by status.
    dom, console = browse(browser, page, "#sort=speedup&dir=-1", out_dir)
    check(not console, "console messages:\n" + "\n".join(console))
    speeds = [float(r[3].split("x")[0]) for r in table_rows(dom) if r[3]]
    check(speeds == sorted(speeds, reverse=True), f"not sorted by speedup: {speeds}")
    dom, console = browse(browser, page, "#status=correct", out_dir)
    shown = [re.sub(r"<[^>]+>", "", r[2]) for r in table_rows(dom)]
    check(shown and all(s == "correct" for s in shown), f"the status filter let others in: {shown}")
    everything = [re.sub(r"<[^>]+>", "", r[2]) for r in rows]
    check(len(shown) == everything.count("correct"), "the status filter left some out")
    print(f"kbench report: {page} opened in {browser}; {problems} problems, screenshot "
          f"{os.path.join(out_dir, 'report.png')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
