#!/bin/bash
# Session 15, device command 1: issue 18's 135-shape table after the paged kernel's prefix path
# became two loops (one per page table: kernels/decode_tile.py attend_range), without a tuning
# table; then the full calibration grid (dense linear part) of one model: LLaMA-3-8B on an
# H200 (to replace the shipped h200_llama3-8b, measured with the old 21-count grid), LLaMA-13B
# on an H100 (the third H100 profile beside session 14's run 3). Results tarred.
set -u
R=$OUT/r; mkdir -p $R/none
export TRITON_CACHE_DIR=/tmp/tc PYTHONUNBUFFERED=1
t0=$(date +%s)
stamp() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a $R/steps.log; }
finish() { stamp done; tar czf $OUT/gpu1.tar.gz -C $OUT r; }
trap finish EXIT
python3 -m pip install -q --no-deps --no-build-isolation -e . > $R/install.log 2>&1
stamp installed; nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,utilization.gpu --format=csv > $R/smi.txt
if grep -q H200 $R/smi.txt; then m=llama3-8b; else m=llama-13b; fi
( time timeout 300 python3 -m parrotsim.calibrate.measure --model $m --out $R/cal_$m ) > $R/cal_$m.log 2>&1
stamp "calibrate.measure $m rc=$?"
timeout 230 python3 -m parrotsim.kernels.session --out $R/none --parts shapes --budget-s 200 > $R/none.log 2>&1
stamp "shapes without a table rc=$?"
