#!/bin/bash
# Device command 4 of 2026-12-05: the per-page descriptor kernel over 64-token pages (a tile
# one copy of one page) beside the shipped kernel. Results tarred at the end.
set -u
R=$OUT/r; mkdir -p $R
export TRITON_CACHE_DIR=/tmp/tc PYTHONPATH=/tmp/site
t0=$(date +%s)
stamp() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a $R/steps.log; }
finish() { stamp done; tar czf $OUT/gpu4.tar.gz -C $OUT r; }
trap finish EXIT
python3 -m pip install -q --no-index --no-deps --target /tmp/site calibrate/replay/build/wheels/*.whl > $R/install.log 2>&1
python3 -m pip install -q --no-deps --no-build-isolation -e . >> $R/install.log 2>&1
stamp installed; nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv > $R/smi.txt
timeout 230 python3 -m parrotsim.kernels.bench_desc --out $R/desc --cascade none --paged "1,4,8x48,100,200x3000,12000x0" --budget-s 170 > $R/desc.log 2>&1
stamp "bench_desc rc=$?"
