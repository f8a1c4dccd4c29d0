#!/usr/bin/env bash
# Installs what kbench needs to build, run and test: Debian packages, and PyTorch (with ninja,
# which builds candidates' extensions, and pyarrow, which reads Parquet) from PyPI when the
# Python lacks them.
set -euo pipefail
PYTHON=${KBENCH_PYTHON:-python3}
TORCH_SPEC=${KBENCH_TORCH_SPEC:-torch==2.11.0}
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO=sudo

packages="cmake g++ ninja-build pkg-config libcli11-dev nlohmann-json3-dev libfmt-dev libgtest-dev libsqlite3-dev sqlite3 clang-format libcurl4-openssl-dev libcpp-httplib-dev"
# The report's test opens the page in a headless browser (skipped where there is none).
[ "${KBENCH_NO_BROWSER:-}" = 1 ] || packages="$packages chromium"
missing=""
for p in $packages; do dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"; done
if [ -n "$missing" ]; then
  echo "kbench: installing Debian packages:$missing"
  $SUDO apt-get update -qq
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing
fi

if ! "$PYTHON" -c "import torch" 2>/dev/null; then
  echo "kbench: installing $TORCH_SPEC for $("$PYTHON" --version 2>&1)"
  "$PYTHON" -m pip install --quiet "$TORCH_SPEC" numpy
fi
"$PYTHON" -c "import ninja" 2>/dev/null || "$PYTHON" -m pip install --quiet ninja
# Parquet problem sets (the Hugging Face layout) are read through pyarrow.
"$PYTHON" -c "import pyarrow" 2>/dev/null || "$PYTHON" -m pip install --quiet pyarrow
# The worker package's Python rules are tested with pytest (tests/python).
"$PYTHON" -c "import pytest" 2>/dev/null || "$PYTHON" -m pip install --quiet pytest
