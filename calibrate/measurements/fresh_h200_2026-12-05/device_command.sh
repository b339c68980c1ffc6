#!/bin/bash
# Device command 1 of 2026-12-05: install as the README says, calibrate (full, quick), the
# descriptor bench, one replay. Everything under $OUT/r, tarred at the end.
set -u
R=$OUT/r; mkdir -p $R
export TRITON_CACHE_DIR=/tmp/tc PYTHONPATH=/tmp/site
t0=$(date +%s)
stamp() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a $R/steps.log; }
finish() { stamp done; tar czf $OUT/gpu1.tar.gz -C $OUT r; }
trap finish EXIT
python3 -m pip install -q --no-index --no-deps --target /tmp/site calibrate/replay/build/wheels/*.whl > $R/install.log 2>&1
python3 -m pip install -q --no-deps --no-build-isolation -e . >> $R/install.log 2>&1
stamp installed; nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv > $R/smi.txt
python3 -m parrotsim.calibrate.preflight > $R/preflight.txt 2>&1
mkdir -p $R/cal
( time timeout 150 python3 -m parrotsim calibrate --model llama-7b --out $R/cal/full.yaml ) > $R/cal/full.log 2>&1
stamp "full calibrate rc=$?"
( time timeout 60 python3 -m parrotsim calibrate --model llama-7b --quick --out $R/cal/quick.yaml ) > $R/cal/quick.log 2>&1
stamp "quick calibrate rc=$?"
python3 -m parrotsim validate $R/cal/quick.yaml --points $R/cal/full.forward.csv --all --no-plot > $R/cal/quick_vs_full_forward.txt 2>&1
python3 -m parrotsim validate $R/cal/full.yaml --points $R/cal/full.forward.csv --all --no-plot > $R/cal/full_vs_full_forward.txt 2>&1
rm -rf $R/cal/*.raw/*.pt 2>/dev/null
stamp validated
timeout 220 python3 -m parrotsim.kernels.bench_desc --out $R/desc --budget-s 170 > $R/desc.log 2>&1
stamp "bench_desc rc=$?"
timeout 110 python3 -m parrotsim.calibrate.replay experiments/replay/dag_apps.yaml --out $R/dag_apps > $R/dag_apps.log 2>&1
stamp "replay dag_apps rc=$?"
