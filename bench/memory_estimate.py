"""Measure the peak memory of runs and fit the constants of ``sim/harness/resources.py``.

Each run is simulated (as the results store does, tables written as Parquet) in a fresh
Python process; its peak resident set size comes from ``wait4``'s ``ru_maxrss``. The runs'
apps, calls and engines are counted by :func:`parrotsim.sim.harness.resources.estimate`; each
run's measured peak is printed next to the estimate with the shipped constants, then for the
runs of 10,000 calls or more the bytes per call above the shipped base and per-engine bytes,
and the largest of them (what ``CALL_BYTES`` must cover). A run holds the calls in flight, not
all calls (apps of a stream are made as they arrive, calls' rows are columns once they end):
the overloaded cases (every call queued at once) and the workloads built up front set the
largest figure, the 300,000 chats that the cluster keeps up with the smallest.

    python bench/memory_estimate.py            # about 3 minutes on 2 cores
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

from parrotsim.sim.harness.config import RunConfig
from parrotsim.sim.harness.resources import (
    BASE_BYTES,
    CALL_BYTES,
    ENGINE_BYTES,
    estimate,
    format_bytes,
)

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
    {"workload": {"kind": "metagpt", "files": 16, "tasks": 160},
     "cluster": {"engines": 32, "profile": "a100-80gb_llama-7b"}},
    {"workload": {"kind": "mixed", "num_chats": 40000, "chat_rate": 200.0,
                  "chat_arrival": "poisson", "mr_apps": 0},
     "cluster": {"engines": 32}},
    {"workload": {"kind": "sharegpt", "num_requests": 300000, "rate": 300.0},
     "cluster": {"engines": 192}},
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
    per_call = {}
    for (c, e, p, _), case in zip(rows, CASES, strict=True):
        if c >= 10_000:  # smaller runs: the fixed costs above the base swamp the calls
            name = f"{case['workload']['kind']} {c}"
            per_call[name] = (p - BASE_BYTES - ENGINE_BYTES * e) / c
            print(f"  {name:<16}: {per_call[name]:,.0f} B per call after the base and engines")
    worst = max(per_call, key=per_call.get)
    print(f"largest: {per_call[worst]:,.0f} B per call ({worst}); CALL_BYTES is {CALL_BYTES:,}")


if __name__ == "__main__":
    main()
