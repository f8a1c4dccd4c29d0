#!/usr/bin/env bash
# nvcc of tests/python/test_build_support.py's TYPICAL_CUDA with the header the build wrapper
# makes at two commits, alternating (compile only: no GPU needed):
#
#   bench/builds/header_ab.sh OLD_COMMIT [NEW_COMMIT (default: the working tree)] [ROUNDS (2)]
#
# Each way compiles with load_inline's flags (the test's NVCC_PROBE, less its identifiers pass);
# prints "way rc seconds" a compile.
set -euo pipefail
cd "$(dirname "$0")/../.."
OLD=$1 NEW=${2:-} ROUNDS=${3:-2}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
for way in old new; do
  mkdir -p "$WORK/$way"
  for f in extensions build_support; do
    src=src/worker/python/kbench_worker/$f.py
    if [ "$way" = old ]; then git show "$OLD:$src" > "$WORK/$way/$f.py"
    elif [ -n "$NEW" ]; then git show "$NEW:$src" > "$WORK/$way/$f.py"
    else cp "$src" "$WORK/$way/$f.py"; fi
  done
done
python3 - "$WORK" <<'PY'
import sys
work = sys.argv[1]
s = open("tests/python/test_build_support.py").read()
def block(name):
    text = s[s.index(name + ' = r"""') + len(name + ' = r"""'):]
    return text[:text.index('"""')]
probe = block("NVCC_PROBE")
probe = probe.replace('made = os.path.join(work, "support")\nsupport._cuda_identifiers(v, os.path.join(made, "cuda"))\n', "")
probe = probe.replace(',\n                  "as_written_too": extensions._fails_as_written_too(done.stderr, made)}))', "}))")
open(f"{work}/probe.py", "w").write(probe)
open(f"{work}/typical.cu", "w").write(block("TYPICAL_CUDA"))
PY
export TORCH_CUDA_ARCH_LIST=${TORCH_CUDA_ARCH_LIST:-9.0} PATH=$PATH:/usr/local/cuda/bin
for i in $(seq 1 "$ROUNDS"); do
  for way in old new; do
    mkdir -p "$WORK/tmp-$way-$i"
    TMPDIR="$WORK/tmp-$way-$i" nice python3 "$WORK/probe.py" "$WORK/$way" "$WORK/typical.cu" 2>/dev/null |
      python3 -c "import json, sys; r = json.loads(sys.stdin.read().strip().splitlines()[-1]); print('$way', r['rc'], round(r['seconds'], 2))"
  done
done
