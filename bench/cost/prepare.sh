#!/usr/bin/env bash
# Puts a copy of an earlier kbench (default: the commit before the trust boundary moved) in
# local/old, for tests/gpu/run.sh to build and run beside this one: the cost side by side.
set -euo pipefail
cd "$(dirname "$0")/../.."
REV=${1:-4292c13}
rm -rf local/old && mkdir -p local/old
git archive "$REV" | tar -x -C local/old
echo "local/old holds kbench at $(git rev-parse --short "$REV")"
