#!/bin/bash
# Sourced by a device command (`source kernels/results/device_lib.sh NAME`, from the repository
# root on the lent GPU machine): results go under $R (= $OUT/r) and are tarred into
# $OUT/NAME.tar.gz when the command exits (at most 8 files come back from a call); `stamp MSG`
# logs the seconds since the start to $R/steps.log; `install [WHEELS]` installs the project
# without dependencies (the image has torch and triton), with the wheels in WHEELS beside it
# (the replay needs pydantic, simpy and ruamel.yaml, calibrate/replay/README.md), and records the
# card in $R/smi.txt.
set -u
R=$OUT/r; mkdir -p $R
export TRITON_CACHE_DIR=/tmp/tc PYTHONUNBUFFERED=1
t0=$(date +%s)
stamp() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a $R/steps.log; }
trap "stamp done; tar czf $OUT/${1:-gpu}.tar.gz -C $OUT r" EXIT
install() {
  if [ -n "${1:-}" ]; then
    python3 -m pip install -q --no-index --no-deps --target /tmp/site $1/*.whl > $R/install.log 2>&1
    export PYTHONPATH=/tmp/site
  fi
  python3 -m pip install -q --no-deps --no-build-isolation -e . >> $R/install.log 2>&1
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,utilization.gpu \
    --format=csv > $R/smi.txt
  stamp "installed on $(tail -1 $R/smi.txt | cut -d, -f1)"
}
