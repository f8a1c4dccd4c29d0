"""Collects the public model-written candidates and their official verdicts into the git-ignored
local/agreement/ that prepare.py reads (bench/agreement/README.md: sources and exclusions).

Reads the runs listed in SOURCES from bare git mirrors of the two forks (the fetch tool puts them
under /work/.mirror/<owner>+<name>/repo; give others as OWNER/NAME=GIT_DIR), matches each
candidate file level_L_problem_P_sample_S_kernel.py with key P, sample S of its run's
eval_results.json, and keeps it unless its verdict is not the candidate's (Kernel not found, the
evaluator returning nothing, a time-out, no kernel image for the device), its problem is not in
the problem set, or it is not CUDA (no load_inline). Writes:
  local/agreement/official.jsonl                 one row a candidate, with its official verdict
  local/agreement/runs/<run>/<candidate file>    the candidates, byte for byte (links followed)
  local/agreement/SOURCES.md                     repository, commit, runs taken
  local/agreement/candidates_l23_correct.jsonl   every officially correct level 2-3 candidate, as
  local/agreement/selected_l23_correct.jsonl     prepare.py writes candidates.jsonl/selected.jsonl

  python3 bench/agreement/collect.py [--problems PROBLEM_SET] [OWNER/NAME=GIT_DIR ...]
"""

import collections
import hashlib
import json
import os
import posixpath
import re
import shutil
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
AGREEMENT = os.path.join(ROOT, "local", "agreement")
PROBLEMS = os.path.join(ROOT, "..", "shared", "kernelbench", "kernelbench.jsonl")
SOURCES = {
    "technoabsurdist/KernelBench": ("9202a5c5786ab959fcaa3b4ce0356348bb87c86a", [
        "gemini_level1_run", "gemini_level2_run", "qwencoder_level1_run", "qwencoder_level2_run",
        "gemini_level3_run"]),
    "yenhao-huang/KernelBench": ("62472a673baf4540af8129fa0e531505f4e62c7d", [
        f"{model}{level}" for model in ("openrouter_deepseek_v4_pro_leaderboard_l",
                                        "codex_gpt55_retime_l", "qwen36_retime_l", "gemma4_retime_l")
        for level in (1, 2, 3)]),
}
CANDIDATE = re.compile(r"level_(\d+)_problem_(\d+)_sample_(\d+)_kernel\.py")
NOT_THE_CANDIDATES = re.compile(r"Kernel not found|evaluator returned None|timed out|timeout|"
                                r"no kernel image is available for execution on the device", re.I)
ERROR_KEYS = ("compilation_error", "correctness_issue", "runtime_error", "cuda_error",
              "other_error", "error")


def git(git_dir, *args):
    return subprocess.run(["git", "--git-dir", git_dir, *args], check=True,
                          capture_output=True).stdout


def blob(git_dir, commit, path, depth=0):
    """The bytes at path, symbolic links followed inside the tree; also the link's target."""
    mode, _, oid = git(git_dir, "ls-tree", commit, "--", path).decode().split("\t")[0].split()
    data = git(git_dir, "cat-file", "blob", oid)
    if mode != "120000":
        return data, None
    if depth > 8:
        raise ValueError(f"link loop at {path}")
    target = posixpath.normpath(posixpath.join(posixpath.dirname(path), data.decode()))
    return blob(git_dir, commit, target, depth + 1)[0], target


def official_row(results, problem, sample):
    """The eval_results.json entry for (problem, sample): a dict or a list of them, keyed by id."""
    entry = results.get(str(problem))
    entries = entry if isinstance(entry, list) else [entry] if entry else []
    return next((e for e in entries if e and e.get("sample_id") == sample), None)


def short(official):
    metadata = official.get("metadata") or {}
    kind = next((k for k in ERROR_KEYS if k in metadata), "")
    return {"runtime": official.get("runtime"), "hardware": metadata.get("hardware"),
            "error_kind": kind, "error": str(metadata.get(kind, ""))[:300],
            "correctness_trials": metadata.get("correctness_trials")}


def collect(repo, git_dir, commit, runs, problems, out, skipped):
    rows = []
    for run in runs:
        results = json.loads(git(git_dir, "show", f"{commit}:runs/{run}/eval_results.json"))
        os.makedirs(os.path.join(out, "runs", run))
        for path in git(git_dir, "ls-tree", "--name-only", commit, f"runs/{run}/").decode().split():
            match = CANDIDATE.fullmatch(posixpath.basename(path))
            if not match:
                continue
            level, problem, sample = map(int, match.groups())
            official = official_row(results, problem, sample)
            code, target = blob(git_dir, commit, path)
            if not official:
                reason = "evaluator returned nothing"
            elif NOT_THE_CANDIDATES.search(json.dumps(official.get("metadata"))):
                reason = NOT_THE_CANDIDATES.search(json.dumps(official["metadata"])).group(0)
            elif (level, problem) not in problems:
                reason = "problem not in the problem set"
            elif b"load_inline" not in code:
                reason = "not CUDA (no load_inline)"
            else:
                reason = None
            if reason:
                skipped[(run, reason)] += 1
                continue
            with open(os.path.join(out, "runs", run, posixpath.basename(path)), "wb") as f:
                f.write(code)
            row = {"run": run, "level": level, "problem_id": problem, "sample_id": sample,
                   "correctness": bool(official["correctness"]),
                   "compiled": bool(official["compiled"]), "repo": repo, "commit": commit,
                   "path": path, "sha256": hashlib.sha256(code).hexdigest()}
            if target:
                row["symlink_target"] = target
            rows.append(dict(row, **short(official)))
    return sorted(rows, key=lambda r: (runs.index(r["run"]), r["problem_id"], r["sample_id"]))


def write_candidates(rows, out, candidates_name, selected_name):
    """The same layout prepare.py writes: sample_id 0, 1, ... per (level, problem_id)."""
    samples = collections.Counter()
    with open(os.path.join(out, candidates_name), "w") as cand, \
            open(os.path.join(out, selected_name), "w") as sel:
        for r in sorted(rows, key=lambda r: (r["level"], r["problem_id"], r["run"])):
            sample = samples[(r["level"], r["problem_id"])]
            samples[(r["level"], r["problem_id"])] += 1
            name = f"level_{r['level']}_problem_{r['problem_id']}_sample_{r['sample_id']}_kernel.py"
            with open(os.path.join(out, "runs", r["run"], name)) as f:
                code = f.read()
            cand.write(json.dumps({"level": r["level"], "problem_id": r["problem_id"],
                                   "sample_id": sample, "code": code}) + "\n")
            sel.write(json.dumps(dict(r, kbench_sample_id=sample)) + "\n")


def main(args):
    problem_set = PROBLEMS
    if "--problems" in args:
        problem_set = args.pop(args.index("--problems") + 1)
        args.remove("--problems")
    git_dirs = {repo: f"/work/.mirror/{repo.replace('/', '+')}/repo" for repo in SOURCES}
    git_dirs.update(arg.split("=", 1) for arg in args)
    problems = {(p["level"], p["problem_id"]) for p in map(json.loads, open(problem_set))}
    shutil.rmtree(AGREEMENT, ignore_errors=True)
    os.makedirs(AGREEMENT)
    rows, skipped, sources = [], collections.Counter(), []
    for repo, (commit, runs) in SOURCES.items():
        git_dir = git_dirs[repo]
        note = ""
        if subprocess.run(["git", "--git-dir", git_dir, "cat-file", "-e", f"{commit}^{{commit}}"],
                          capture_output=True).returncode:
            newest = git(git_dir, "rev-parse", "HEAD").decode().strip()
            note = f" (commit {commit} absent from the mirror: its newest taken)"
            print(f"{repo}: {commit} absent, using {newest}", file=sys.stderr)
            commit = newest
        rows += collect(repo, git_dir, commit, runs, problems, AGREEMENT, skipped)
        sources.append(f"| {repo} | {commit}{note} | " + ", ".join(f"`runs/{r}`" for r in runs) + " |")
    with open(os.path.join(AGREEMENT, "official.jsonl"), "w") as f:
        f.writelines(json.dumps(r) + "\n" for r in rows)
    with open(os.path.join(AGREEMENT, "SOURCES.md"), "w") as f:
        f.write("# Sources of local/agreement (bench/agreement/collect.py)\n\n"
                "| repository | commit | runs taken |\n|---|---|---|\n" + "\n".join(sources) + "\n")
    write_candidates([r for r in rows if r["level"] in (2, 3) and r["correctness"]], AGREEMENT,
                     "candidates_l23_correct.jsonl", "selected_l23_correct.jsonl")
    for (run, reason), n in sorted(skipped.items()):
        print(f"left out {n:3d} of {run}: {reason}")
    count = collections.Counter((r["level"], r["correctness"]) for r in rows)
    print(f"{len(rows)} candidates ({sum(r['correctness'] for r in rows)} officially correct):",
          dict(sorted(count.items())))


if __name__ == "__main__":
    main(sys.argv[1:])
