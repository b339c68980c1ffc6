"""Measure the peak memory of runs and fit the constants of ``sim/harness/resources.py``.

Each run is simulated (as the results store does, tables written as Parquet) in a fresh
Python process; its peak resident set size comes from ``wait4``'s ``ru_maxrss``. The runs'
apps, calls and engines are counted by :func:`parrotsim.sim.harness.resources.estimate`; a
least-squares fit of peak RSS = base + bytes/call * calls + bytes/engine * engines is printed
with each run's measured peak next to the estimate with the shipped constants.

    python bench/memory_estimate.py            # about 90 s on 2 cores
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np

from parrotsim.sim.harness.config import RunConfig
from parrotsim.sim.harness.resources import estimate, format_bytes

CHILD = """
import io, json, sys
from parrotsim.sim.harness.config import RunConfig
from parrotsim.sim.harness.simulation import simulate
r = simulate(RunConfig.model_validate(json.loads(sys.argv[1])))
for t in (r.calls, r.apps, r.engines):
    t.to_parquet(io.BytesIO(), index=False, compression="zstd")
"""

CASES = [
    {"workload": {"kind": "sharegpt", "num_requests": 1, "rate": 1.0}},
    {"workload": {"kind": "sharegpt", "num_requests": 2000, "rate": 20.0},
     "cluster": {"engines": 4}},
    {"workload": {"kind": "sharegpt", "num_requests": 10000, "rate": 50.0},
     "cluster": {"engines": 8}},
    {"workload": {"kind": "sharegpt", "num_requests": 40000, "rate": 200.0},
     "cluster": {"engines": 32}},
    {"workload": {"kind": "sharegpt", "num_requests": 120000, "rate": 600.0},
     "cluster": {"engines": 64}},
    {"workload": {"kind": "sharegpt", "num_requests": 4000, "rate": 40.0},
     "cluster": {"engines": 256}},
    {"workload": {"kind": "gpts", "num_requests": 10000, "rate": 50.0},
     "cluster": {"engines": 16, "profile": "a100-80gb_llama-7b"}},
    {"workload": {"kind": "metagpt", "files": 16, "tasks": 40},
     "cluster": {"engines": 8, "profile": "a100-80gb_llama-7b"}},
]


def peak_rss(config: dict) -> int:
    """Peak RSS in bytes of a fresh process that simulates ``config``."""
    proc = subprocess.Popen([sys.executable, "-c", CHILD, json.dumps(config)])
    _, status, usage = os.wait4(proc.pid, 0)
    if status:
        raise SystemExit(f"run failed: {config}")
    return usage.ru_maxrss * 1024  # kilobytes on Linux


def main() -> None:
    rows = []
    for case in CASES:
        cfg = RunConfig.model_validate(case)
        size = estimate(cfg)
        peak = peak_rss(case)
        rows.append((size.calls, size.engines, peak, size.bytes))
        print(f"{case['workload']['kind']:<9} calls {size.calls:>6} engines {size.engines:>4}  "
              f"peak {format_bytes(peak):>9}  estimate {format_bytes(size.bytes):>9}  "
              f"({100 * (size.bytes / peak - 1):+.0f} %)", flush=True)
    a = np.array([[1.0, c, e] for c, e, _, _ in rows])
    y = np.array([p for _, _, p, _ in rows], dtype=float)
    (base, per_call, per_engine), *_ = np.linalg.lstsq(a, y, rcond=None)
    print(f"fit: base {format_bytes(base)}, {per_call:,.0f} B per call, "
          f"{per_engine:,.0f} B per engine")
    for (c, e, p, _), case in zip(rows, CASES, strict=True):
        if c > 100:
            print(f"  {case['workload']['kind']:<9} calls {c:>6}: "
                  f"{(p - base - per_engine * e) / c:,.0f} B per call after base and engines")


if __name__ == "__main__":
    main()
