#!/bin/bash
# Session 17, device command 3 (the lent card was an H100 twice): a fresh LLaMA-7B calibration
# with the dense linear grid on this H100 (python -m parrotsim.calibrate.measure), so that the
# shipped h100_llama-7b (measured on another H100 in session 14) can be held against a fresh
# machine's forward passes here, off the GPU (parrotsim validate --points).
source kernels/results/device_lib.sh gpu3
install
( time timeout 240 python3 -m parrotsim.calibrate.measure --model llama-7b --out $R/cal_llama-7b ) \
  > $R/cal_llama-7b.log 2>&1
stamp "calibrate.measure llama-7b rc=$?"
