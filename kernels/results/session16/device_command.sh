#!/bin/bash
# Session 16, device command 1 (session 15's commands 2 and 3, which found no machine, in one
# call). On an H100: the replay ground truth (calibrate/replay/README.md) of sharegpt_vllm with
# the H100's own profile (h100_llama-7b); on an H200: the full calibration grid (dense linear
# part) of LLaMA-3-8B, to replace h200_llama3-8b (measured on the old 21-count grid). Then, on
# either, issue 18's 135-shape table after the paged kernel's prefix path stopped adding the
# prefix length on the GPU (no tuning table). The command stops itself at 450 s. Carry
# calibrate/replay/build (the cp312 wheels of pydantic, pydantic_core, annotated_types,
# typing_inspection, simpy, ruamel.yaml).
source kernels/results/device_lib.sh gpu1
left() { echo $(( 450 - $(date +%s) + t0 )); }
install calibrate/replay/build/wheels
if grep -q H200 $R/smi.txt; then
  ( time timeout 280 python3 -m parrotsim.calibrate.measure --model llama3-8b --out $R/cal_llama3-8b ) \
    > $R/cal_llama3-8b.log 2>&1
  stamp "calibrate.measure llama3-8b rc=$?"
else
  timeout 280 python3 -m parrotsim.calibrate.replay experiments/replay/sharegpt_vllm.yaml \
    --out $R/sharegpt_vllm --profile h100_llama-7b > $R/sharegpt_vllm.log 2>&1
  stamp "replay sharegpt_vllm rc=$?"
fi
mkdir -p $R/none; b=$(( $(left) - 25 ))
[ $b -gt 30 ] && timeout $(( b + 20 )) python3 -m parrotsim.kernels.session --out $R/none \
  --parts shapes --budget-s $b > $R/none.log 2>&1
stamp "shapes without a table rc=$?"
