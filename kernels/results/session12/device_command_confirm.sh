#!/bin/bash
# Device command 3 of 2026-12-05 (session 12): the best tiles again on more shapes, each twice
# (bench_cascade_overlap --grid confirm), then the tuning table with the suffix tiles among the
# shared-prefix candidates (kernels/tune.py). Run from the repository root; results tarred.
set -u
R=$OUT/r; mkdir -p $R
export TRITON_CACHE_DIR=/tmp/tc
t0=$(date +%s)
stamp() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a $R/steps.log; }
finish() { stamp done; tar czf $OUT/gpu3.tar.gz -C $OUT r; }
trap finish EXIT
python3 -m pip install -q --no-deps --no-build-isolation -e . > $R/install.log 2>&1
stamp installed; nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,utilization.gpu --format=csv > $R/smi.txt
timeout 150 python3 -m parrotsim.kernels.bench_cascade_overlap --out $R/confirm --grid confirm --budget-s 100 > $R/confirm.log 2>&1
stamp "bench_cascade_overlap confirm rc=$?"
timeout 200 python3 -m parrotsim.kernels.tune --out $R/h200_kernels.csv --budget-s 150 > $R/tune.log 2>&1
stamp "tune rc=$?"
