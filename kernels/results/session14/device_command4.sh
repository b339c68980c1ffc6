#!/bin/bash
# Session 14, device command 4: how much of a fork group's shared prefix the paged kernel reads
# from L2 (kernels/bench_l2_dedup.py: the no-split kernel at 9 tiles and the split-KV kernel,
# LLaMA-13B heads, B 8-64 sharing 4,864 tokens + 256 private each, against private pages and
# the bytes floors). Results tarred.
set -u
R=$OUT/r; mkdir -p $R
export TRITON_CACHE_DIR=/tmp/tc PYTHONUNBUFFERED=1
t0=$(date +%s)
stamp() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a $R/steps.log; }
finish() { stamp done; tar czf $OUT/gpu4.tar.gz -C $OUT r; }
trap finish EXIT
python3 -m pip install -q --no-deps --no-build-isolation -e . > $R/install.log 2>&1
stamp installed; nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,utilization.gpu --format=csv > $R/smi.txt
timeout 200 python3 -m parrotsim.kernels.bench_l2_dedup --out $R/l2 --budget-s 150 > $R/l2.log 2>&1
stamp "bench_l2_dedup rc=$?"
