#!/usr/bin/env bash
# kbench's own run folder under KernelBench's real analysis: a tree of five small level-1
# problems (a copy of the harness with its KernelBench/level1 replaced by them), candidates for
# three (one correct, one raising at import, two wrong) plus a dangling link and one outside the
# dataset, evaluated by kbench on the CPU; then bench/analysis/compare.sh on the run's level1/.
#
#   bench/analysis/kbench_run.sh [OUT_DIR]     (after bench/analysis/setup.sh)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
T=${1:-$ROOT/local/kb-tiny}
rm -rf "$T" && mkdir -p "$T"
cp -r "$ROOT/local/kernelbench-harness" "$T/harness"
rm -rf "$T/harness/KernelBench/level1" && mkdir -p "$T/harness/KernelBench/level1"
python3 - "$T" <<'PY'
import json, os, sys
root = sys.argv[1]
relu = ("import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n"
        "        return torch.relu(x)\ndef get_inputs():\n    return [torch.randn(64, 1024)]\n"
        "def get_init_inputs():\n    return []\n")
with open(f"{root}/problems.jsonl", "w") as f:
    for i in range(1, 6):
        open(f"{root}/harness/KernelBench/level1/{i}_relu.py", "w").write(relu)
        f.write(json.dumps({"code": relu, "level": 1, "name": f"{i}_relu", "problem_id": i}) + "\n")
honest = ("import torch\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n"
          "        return torch.relu(x)\n")
wrong = honest.replace("torch.relu(x)\n", "torch.relu(x) + 1\n")
c = f"{root}/cands"
os.makedirs(c)
def put(p, s, code):
    open(f"{c}/level_1_problem_{p}_sample_{s}_kernel.py", "w").write(code)
put(1, 0, honest); put(1, 1, wrong)
os.symlink(f"{root}/nowhere.py", f"{c}/level_1_problem_2_sample_0_kernel.py")
put(4, 0, "import torch\nraise RuntimeError('no kernel today')\n"); put(5, 0, wrong); put(9, 0, honest)
json.dump({"level1": {f"{i}_relu.py": {"mean": 0.05 * i} for i in range(1, 6)}},
          open(f"{root}/baseline.json", "w"))
PY
set +e
"$ROOT/build/kbench" eval --device cpu --policy permissive --dataset "$T/harness/KernelBench" \
  --level 1 --candidates "$T/cands" --runs-dir "$T/runs" --run tiny --max-seconds 0.5 \
  --kernelbench-baseline "$T/baseline.json" > "$T/eval.out" 2> "$T/eval.err"
echo "kbench eval exit code: $? (1: evaluated, some not correct)"
set -e
cat "$T/eval.out"
KBENCH_HARNESS_DIR="$T/harness" KBENCH_KERNELBENCH_JSONL="$T/problems.jsonl" \
  "$ROOT/bench/analysis/compare.sh" "$T/runs/tiny/level1" 1 "$T/baseline.json"
