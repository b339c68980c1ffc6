"""Benchmark: a 200-run sweep with ``--jobs 2``, then the same sweep again (all cached).

    PYTHONPATH=. python bench/sweep_cache.py [--jobs N] [--keep DIR]

Prints both wall times and their ratio; the second run only validates and hashes the 200
configs, reads 200 small ``summary.json`` files and rewrites the summary (target: < 5 % of the
first).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from parrotsim.sim.harness.runner import run_experiment

SWEEP = """\
name: sweep_200
description: 200 small ShareGPT runs for the cache benchmark.
run:
  workload: {kind: sharegpt, num_requests: 20}
variants:
  capped: {cluster.engine: {policy: vllm, capacity_tokens: 4096}}
  uncapped: {cluster.engine: {policy: vllm}}
sweep:
  workload.rate: [1.0, 2.0, 4.0, 8.0, 16.0]
  cluster.engines: [1, 2]
  cluster.scheduler.policy: [least_queue, round_robin]
seeds: [0, 1, 2, 3, 4]
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--keep", type=Path, help="write the results here instead of a temp dir")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = args.keep or Path(tmp)
        root.mkdir(parents=True, exist_ok=True)
        exp = root / "sweep_200.yaml"
        exp.write_text(SWEEP)
        out = root / "out"
        times = []
        for label in ("first (runs everything)", "second (all cached)"):
            start = time.perf_counter()
            frame = run_experiment(exp, out, jobs=args.jobs, progress=False)
            times.append(time.perf_counter() - start)
            ok = int((frame["status"] == "ok").sum())
            print(f"{label:<24} {times[-1]:7.2f} s  ({len(frame)} runs, {ok} ok)")
        print(f"ratio second/first: {times[1] / times[0]:.2%}")


if __name__ == "__main__":
    main()
