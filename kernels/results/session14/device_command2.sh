#!/bin/bash
# Session 14, device command 2: the linear part (all layers, no attention) every 16 tokens to
# 1,024 and every 64 to 2,048 on LLaMA-3-8B and LLaMA-7B shapes (calibrate/forward_breakdown.py --parts
# linear), then the LLaMA-3-8B calibration grids with the linear grid then in
# calibrate/grids.py: 8 more token counts (160, 224, 320, 448, 640, 896, 1280, 1792), since
# reverted (README). Raw data only; fitted on the CPU. Results tarred.
# (Ran as parrotsim.kernels.bench_mixed; the same module moved to
# parrotsim.calibrate.forward_breakdown since, as kernels/ may not import calibrate/.)
set -u
R=$OUT/r; mkdir -p $R
export TRITON_CACHE_DIR=/tmp/tc PYTHONUNBUFFERED=1
t0=$(date +%s)
stamp() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a $R/steps.log; }
finish() { stamp done; tar czf $OUT/gpu2.tar.gz -C $OUT r; }
trap finish EXIT
python3 -m pip install -q --no-deps --no-build-isolation -e . > $R/install.log 2>&1
stamp installed; nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,utilization.gpu --format=csv > $R/smi.txt
for m in llama3-8b llama-7b; do
  timeout 120 python3 -m parrotsim.calibrate.forward_breakdown --model $m --parts linear --out $R/lin_$m > $R/lin_$m.log 2>&1
  stamp "linear sweep $m rc=$?"
done
timeout 200 python3 -m parrotsim.calibrate.measure --model llama3-8b --out $R/cal8b > $R/cal8b.log 2>&1
stamp "calibrate.measure llama3-8b rc=$?"
