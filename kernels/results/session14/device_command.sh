#!/bin/bash
# Session 14, device command 1: (a) where the LLaMA-3-8B mixed batch that the profile misses by
# 17 % spends its time (calibrate/forward_breakdown.py: per-kernel GPU time of the miss, its halves and
# neighbours); (b) the tuning table over the denser grid of kernels/tune.py (issue 18's batches and
# contexts each within a factor 1.5 of a grid point, shared batch 1 and prefix 512), then issue
# 18's 135-shape table run with it. Run from the repository root; results tarred.
# (Ran as parrotsim.kernels.bench_mixed; the same module moved to
# parrotsim.calibrate.forward_breakdown since, as kernels/ may not import calibrate/.)
set -u
R=$OUT/r; mkdir -p $R
export TRITON_CACHE_DIR=/tmp/tc PYTHONUNBUFFERED=1
t0=$(date +%s)
stamp() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a $R/steps.log; }
finish() { stamp done; tar czf $OUT/gpu1.tar.gz -C $OUT r; }
trap finish EXIT
python3 -m pip install -q --no-deps --no-build-isolation -e . > $R/install.log 2>&1
stamp installed; nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,utilization.gpu --format=csv > $R/smi.txt
timeout 100 python3 -m parrotsim.calibrate.forward_breakdown --model llama3-8b --out $R/mixed > $R/mixed.log 2>&1
stamp "forward_breakdown rc=$?"
left=$(( 585 - ($(date +%s) - t0) - 70 ))
timeout $(( left + 60 )) python3 -m parrotsim.kernels.session --out $R/k --budget-s $left \
    --parts tune,shapes > $R/session.log 2>&1
stamp "session tune,shapes (budget $left s) rc=$?"
