#!/bin/bash
# Session 13, device command 1: the H200 tuning table (suffix tiles among the shared-prefix
# candidates), issue 18's shape table run with it, the LLaMA-3-8B (G = 4) calibration grids
# measured with the kernels as tuned, then session 12's best cascade tiles again (confirm grid).
# Run from the repository root (no wheels: the device only measures; the profile is fitted on
# the CPU with `parrotsim calibrate --fit-from`). Results tarred.
set -u
R=$OUT/r; mkdir -p $R
export TRITON_CACHE_DIR=/tmp/tc PYTHONUNBUFFERED=1
t0=$(date +%s)
stamp() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a $R/steps.log; }
finish() { stamp done; tar czf $OUT/gpu1.tar.gz -C $OUT r; }
trap finish EXIT
python3 -m pip install -q --no-deps --no-build-isolation -e . > $R/install.log 2>&1
stamp installed; nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,utilization.gpu --format=csv > $R/smi.txt
timeout 320 python3 -m parrotsim.kernels.session --out $R/k --budget-s 250 --parts tune,shapes > $R/session.log 2>&1
stamp "session tune,shapes rc=$?"
if [ -s $R/k/kernel_table.csv ]; then
  PARROTSIM_KERNEL_TABLE=$R/k/kernel_table.csv timeout 150 python3 -m parrotsim.calibrate.measure \
      --model llama3-8b --out $R/cal8b > $R/cal8b.log 2>&1
  stamp "calibrate.measure llama3-8b with the table rc=$?"
fi
left=$(( 560 - ($(date +%s) - t0) ))
if [ $left -gt 40 ]; then
  timeout $left python3 -m parrotsim.kernels.bench_cascade_overlap --out $R/confirm --grid confirm \
      --budget-s $(( left - 25 )) > $R/confirm.log 2>&1
  stamp "bench_cascade_overlap confirm rc=$?"
fi
