#!/bin/bash
# Session 17, device command 2: on an H200 only, a fresh LLaMA-7B calibration with the dense
# linear grid (python -m parrotsim.calibrate.measure), to hold the shipped h200_llama-7b (21-count
# grid, 2026-12-02) against a fresh machine's forward passes (parrotsim validate, run here).
# On any other card it records the card and stops.
source kernels/results/device_lib.sh gpu2
install
if grep -q H200 $R/smi.txt; then
  ( time timeout 200 python3 -m parrotsim.calibrate.measure --model llama-7b --out $R/cal_llama-7b ) \
    > $R/cal_llama-7b.log 2>&1
  stamp "calibrate.measure llama-7b rc=$?"
fi
