#!/bin/bash
# Device command 2 of 2026-12-05 (session 12): the fine grid around the first run's best
# (kernels/bench_cascade_overlap.py). Run from the repository root; results tarred at the end.
set -u
R=$OUT/r; mkdir -p $R
export TRITON_CACHE_DIR=/tmp/tc
t0=$(date +%s)
stamp() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a $R/steps.log; }
finish() { stamp done; tar czf $OUT/gpu2.tar.gz -C $OUT r; }
trap finish EXIT
python3 -m pip install -q --no-deps --no-build-isolation -e . > $R/install.log 2>&1
stamp installed; nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,utilization.gpu --format=csv > $R/smi.txt
timeout 420 python3 -m parrotsim.kernels.bench_cascade_overlap --out $R/fine --grid fine --budget-s 240 > $R/fine.log 2>&1
stamp "bench_cascade_overlap fine rc=$?"
