#!/bin/bash
K=${KBENCH:-build/kbench}; P=${PYTHON:-python3}
rm -rf /tmp/fcy; mkdir -p /tmp/fcy
# the build support made first (untimed)
$K check --device cpu --python $P --cache-dir /tmp/fcy/cache --no-timing -q suite/problems/level1/1_ReLU.py suite/candidates/cpu/level_1_problem_1_sample_0_kernel.py > /dev/null 2>&1
for round in 1 2; do
for s in "" "--no-build-support"; do
  find /tmp/fcy/cache -mindepth 1 -maxdepth 1 ! -name support -exec rm -rf {} +
  rm -rf /tmp/fcy/runs
  /usr/bin/time -f "%e s$s" $K eval $s --dataset builtin --candidates builtin:cpu --device cpu --no-timing -q --python $P --cache-dir /tmp/fcy/cache --runs-dir /tmp/fcy/runs > /dev/null 2>> ${OUT:-/tmp}/times.txt
done; done
