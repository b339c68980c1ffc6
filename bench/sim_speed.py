"""Simulator speed: simulated calls and SimPy events per wall-clock second on one core.

(a) the Fig 11 chain summary (article 0, chunk 1024, output 50) on one vLLM engine;
(b) 100,000 ShareGPT-like chat requests, Poisson at 100 req/s, on 64 vLLM engines;
(c) the same arrivals on 8 engines: overloaded, batches of ~90 with a full KV cache and preemptions.

    python bench/sim_speed.py [--requests 100000] [--engines 64] [--rate 100]

Prints one line per case: calls, events, simulated seconds, wall seconds, calls/s, events/s.
The wall time is the run as a user sees it: generating the workload's apps, then simulating
(``build`` says how much of it was the workload).
"""

from __future__ import annotations

import argparse
import time

from parrotsim.sim.harness.config import RunConfig
from parrotsim.sim.harness.simulation import build_apps, simulate


def measure(name: str, raw: dict) -> dict:
    cfg = RunConfig.model_validate(raw)
    start = time.perf_counter()
    apps = build_apps(cfg)
    build = time.perf_counter() - start
    result = simulate(cfg, apps=apps, validate=False)  # build_apps validated them
    wall = time.perf_counter() - start
    calls = int(result.summary["calls"])
    row = {"case": name, "calls": calls, "events": result.events,
           "sim_s": result.summary["makespan"], "wall_s": wall, "build_s": build,
           "calls_per_s": calls / wall, "events_per_s": result.events / wall}
    print(f"{name:28s} calls={calls:7d} events={result.events:8d} sim={row['sim_s']:9.1f}s "
          f"wall={wall:7.2f}s (build {build:5.2f}s)  {row['calls_per_s']:9.0f} calls/s  "
          f"{row['events_per_s']:9.0f} events/s", flush=True)
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=100_000)
    ap.add_argument("--engines", type=int, default=64)
    ap.add_argument("--rate", type=float, default=100.0)
    args = ap.parse_args()
    measure("fig11_chain_1_engine", {
        "workload": {"kind": "chain_summary", "docs": [0], "chunk_size": 1024, "output_len": 50},
        "cluster": {"engine": {"policy": "vllm", "capacity_tokens": 4096}}})
    for engines in (args.engines, max(1, args.engines // 8)):
        measure(f"chat_{args.requests}_on_{engines}", {
            "workload": {"kind": "sharegpt", "num_requests": args.requests, "rate": args.rate},
            "cluster": {"engines": engines, "engine": {"policy": "vllm"}}})


if __name__ == "__main__":
    main()
