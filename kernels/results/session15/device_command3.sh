#!/bin/bash
# Session 15, device command 3 (the replay of command 2 found no machine, and too little device
# time was left for it): issue 18's 135-shape table after the paged kernel's prefix path stopped
# adding the prefix length on the GPU (no tuning table), stopped at 150 s.
source kernels/results/device_lib.sh gpu3
install
mkdir -p $R/none
timeout 150 python3 -m parrotsim.kernels.session --out $R/none --parts shapes --budget-s 120 \
  > $R/none.log 2>&1
stamp "shapes without a table rc=$?"
