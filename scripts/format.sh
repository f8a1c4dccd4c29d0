#!/usr/bin/env bash
# clang-format over kbench's C++ (.clang-format): rewrites the files, or with --check lists the
# ones that differ and fails.
set -euo pipefail
cd "$(dirname "$0")/.."
FORMAT=${CLANG_FORMAT:-clang-format}
files=$(git ls-files --cached --others --exclude-standard 'src/*.cpp' 'src/*.hpp' 'tests/*.cpp' 'tests/*.hpp')
if [ "${1:-}" = "--check" ]; then
  bad=""
  for f in $files; do
    "$FORMAT" --dry-run -Werror "$f" >/dev/null 2>&1 || bad="$bad $f"
  done
  if [ -n "$bad" ]; then
    echo "kbench: not formatted (scripts/format.sh fixes them):$bad" >&2
    exit 1
  fi
  echo "kbench: every C++ file is formatted ($("$FORMAT" --version))"
else
  "$FORMAT" -i $files
fi
