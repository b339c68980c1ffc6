#!/bin/bash
# Session 14, device command 5: issue 18's 135-shape table after the paged fallback learnt to
# step over the unused slots of a prefix's last page (a `gap` argument of paged_decode_attention,
# since replaced by `prefix`, command 6: the fallback still built its table with torch.cat per
# call), once with run 1's H100 tuning table and once with the built-in heuristics.
set -u
R=$OUT/r; mkdir -p $R/tab $R/none
export TRITON_CACHE_DIR=/tmp/tc PYTHONUNBUFFERED=1
t0=$(date +%s)
stamp() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a $R/steps.log; }
finish() { stamp done; tar czf $OUT/gpu5.tar.gz -C $OUT r; }
trap finish EXIT
python3 -m pip install -q --no-deps --no-build-isolation -e . > $R/install.log 2>&1
stamp installed; nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,utilization.gpu --format=csv > $R/smi.txt
cp kernels/results/session14/run1/k/kernel_table.csv $R/tab/kernel_table.csv
timeout 230 python3 -m parrotsim.kernels.session --out $R/tab --parts shapes --budget-s 160 > $R/tab.log 2>&1
stamp "shapes with run 1's table rc=$?"
timeout 230 python3 -m parrotsim.kernels.session --out $R/none --parts shapes --budget-s 160 > $R/none.log 2>&1
stamp "shapes without a table rc=$?"
