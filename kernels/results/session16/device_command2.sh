#!/bin/bash
# Session 16, device command 2: the calibration's new env.json fields on a real GPU. A quick
# LLaMA-7B calibration (`python -m parrotsim.calibrate.measure --quick`) must record the
# compute capability and the paged kernel's occupancy (kernels/occupancy.py, compiled for the
# device's capability), which the fit turns into curves.decode_paged_waves; the fit itself
# runs here, off the GPU. On an H200, then, the full LLaMA-3-8B calibration (dense linear
# grid) to replace h200_llama3-8b. The command stops itself at 400 s.
source kernels/results/device_lib.sh gpu2
install
( time timeout 200 python3 -m parrotsim.calibrate.measure --model llama-7b --quick --out $R/quick_7b ) \
  > $R/quick_7b.log 2>&1
stamp "calibrate.measure --quick llama-7b rc=$?"
if grep -q H200 $R/smi.txt; then
  ( time timeout 280 python3 -m parrotsim.calibrate.measure --model llama3-8b --out $R/cal_llama3-8b ) \
    > $R/cal_llama3-8b.log 2>&1
  stamp "calibrate.measure llama3-8b rc=$?"
fi
