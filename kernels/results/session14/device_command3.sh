#!/bin/bash
# Session 14, device command 3: the full calibration grids of LLaMA-7B and LLaMA-3-8B with the
# linear part measured every 16 tokens to 1,024 and every 64 to 2,048 (calibrate/grids.py);
# raw data only, fitted on the CPU with `parrotsim calibrate --fit-from`. Results tarred.
set -u
R=$OUT/r; mkdir -p $R
export TRITON_CACHE_DIR=/tmp/tc PYTHONUNBUFFERED=1
t0=$(date +%s)
stamp() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a $R/steps.log; }
finish() { stamp done; tar czf $OUT/gpu3.tar.gz -C $OUT r; }
trap finish EXIT
python3 -m pip install -q --no-deps --no-build-isolation -e . > $R/install.log 2>&1
stamp installed; nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,utilization.gpu --format=csv > $R/smi.txt
for m in llama-7b llama3-8b; do
  ( time timeout 250 python3 -m parrotsim.calibrate.measure --model $m --out $R/cal_$m ) > $R/cal_$m.log 2>&1
  stamp "calibrate.measure $m rc=$?"
done
