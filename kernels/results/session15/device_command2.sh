#!/bin/bash
# Session 15, device command 2: the replay ground truth (calibrate/replay/README.md) on whichever
# card comes: sharegpt_vllm replayed with that GPU's own profile (--profile h100_llama-7b on an
# H100, h200_llama-7b on an H200); then, in the time left (the command stops at 280 s), issue
# 18's 135-shape table after the paged kernel's prefix path stopped adding the prefix length on
# the GPU (no tuning table). Carry calibrate/replay/build (the cp312 wheels of pydantic,
# pydantic_core, annotated_types, typing_inspection, simpy, ruamel.yaml).
source kernels/results/device_lib.sh gpu2
left() { echo $(( 280 - $(date +%s) + t0 )); }
install calibrate/replay/build/wheels
if grep -q H200 $R/smi.txt; then p=h200_llama-7b; else p=h100_llama-7b; fi
timeout $(left) python3 -m parrotsim.calibrate.replay experiments/replay/sharegpt_vllm.yaml \
  --out $R/sharegpt_vllm --profile $p > $R/sharegpt_vllm.log 2>&1
stamp "replay sharegpt_vllm rc=$?"
mkdir -p $R/none; b=$(( $(left) - 25 ))
[ $b -gt 30 ] && timeout $(left) python3 -m parrotsim.kernels.session --out $R/none --parts shapes \
  --budget-s $b > $R/none.log 2>&1
stamp "shapes without a table rc=$?"
