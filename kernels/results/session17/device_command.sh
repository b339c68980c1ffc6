#!/bin/bash
# Session 17, device command 1 (issue 18): the shape table again, now with a plain streaming
# read of each kernel's bytes beside every kernel time (kernels/bench_shapes.py
# paged_read_us / shared_read_us), so that each missed target is put down to the read (no
# kernel reading those bytes can reach it at that size) or to the kernel; plus the
# shared-prefix target shape B=64, P=6000, S=256 at G 1/4/8. On an H200, then, a fresh
# LLaMA-7B calibration with the dense linear grid, to hold the shipped h200_llama-7b (21-count
# grid, 2026-12-02) against a fresh machine's forward passes. Stops itself at about 500 s.
source kernels/results/device_lib.sh gpu1
install
SPEC="1,4,8x1,7,48,100,200x500,3000,12000x0,17,1000;1,4,8x64x6000x256"
( time timeout 300 python3 -m parrotsim.kernels.bench --out $R/shapes --shapes "$SPEC" ) \
  > $R/shapes.log 2>&1
stamp "shapes rc=$?"
if grep -q H200 $R/smi.txt; then
  ( time timeout 170 python3 -m parrotsim.calibrate.measure --model llama-7b --out $R/cal_llama-7b ) \
    > $R/cal_llama-7b.log 2>&1
  stamp "calibrate.measure llama-7b rc=$?"
fi
tail -8 $R/shapes.log
