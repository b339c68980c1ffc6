"""Simulator scale: cost per call as engines, calls and policies grow, and where the time goes.

Three families of configurations, each run in a fresh subprocess (so peak RSS is its own):

* ``chat``: ShareGPT-like chats, Poisson arrivals at ``engines * 100 / 64`` req/s (the load of
  ``bench/sim_speed.py``'s 64-engine case per engine), least-queue + vLLM, for engines in
  ``--engines`` x calls in ``--calls``;
* ``gpts``: Fig 17's GPTs apps (A6000, LLaMA-7B) at ``engines * 200 / 256`` req/s, Fig 17's
  ``parrot`` variant (Parrot client, prefix-affinity scheduler, Parrot engines, shared-prefix
  kernel), the same without a per-engine token budget (``parrot_unbounded``: engines short of
  KV blocks), and its ``baseline_vllm`` (least-queue + vLLM), all on the same arrivals, for
  engines in ``--gpts-engines`` and ``--gpts-calls`` requests;
* ``batch``: cost per SimPy event as the batch grows: ``--batch-calls`` chats at 100 req/s on
  8 engines (overloaded: batches of ~80, a full KV cache, preemptions) and on 64 (batches ~8).

    python bench/sim_scale.py [--engines 8,64,256,1024] [--calls 1e4,1e5,1e6]
                              [--gpts-engines 64,256] [--gpts-calls 4000]
                              [--batch-calls 20000] [--only chat|gpts|batch] [--repeats 1]

The default runs in a few minutes on one core: the batch pair, every engine count at 1e4
calls, 8, 64 and 1,024 engines at 1e5, and the GPTs pairs at 4,000 calls. Prints one line per
run: calls, calls/s and us per call over the whole run as a user sees it (build apps + set-up
+ event loop + tables; wall clock, and the process's CPU time, steadier on a shared machine),
SimPy events per call, CPU us per event and the mean batch (sequences per iteration), the time
of each phase, the CPU time of Python's cyclic garbage collections (in any phase), and the
process's peak RSS; after each GPTs pair, the Parrot / least-queue ratio of the cost per call
(wall and CPU).

Beside every chat run it times ``bench/sim_floor.py``'s skeleton (the leanest SimPy model with
the same events and least-queue dispatch, no fidelity feature) on the same engine count, rate
and call count, and after the chat grid prints, per call count, each engine count's cost per
call over the smallest count's, for the simulator and for the skeleton: how much of the growth
with engines the platform itself shows (per-engine state no longer in the CPU's caches).
``--repeats N`` runs each chat configuration N times, alternating simulator and skeleton, and
reports the medians (single runs at 1,024 engines vary by +-15 % on a shared machine).
"""

from __future__ import annotations

import argparse
import gc
import json
import resource
import statistics
import subprocess
import sys
import time

import simpy
from sim_floor import skeleton

from parrotsim.sim.harness import simulation
from parrotsim.sim.harness.config import RunConfig

CHAT_RATE_PER_ENGINE = 100 / 64
GPTS_RATE_PER_ENGINE = 200 / 256
BATCH_RATE = 100.0  # req/s: batches of ~80 on 8 engines (overloaded), ~8 on 64
GPTS_VARIANTS = {
    "parrot": {
        "client": {"kind": "parrot"},
        "cluster": {"prefix_cache": True, "prefix_ttl_s": 600, "kernel": "shared_prefix",
                    "one_prefix_per_batch": True,
                    "engine": {"policy": "parrot", "max_batch_size": 256,
                               "max_num_batched_tokens": 8000, "num_kv_cache_blocks": 3000},
                    "scheduler": {"policy": "parrot", "ctx_aware": True,
                                  "max_requests_per_engine": 128}}},
    "least_queue_vllm": {
        "cluster": {"engine": {"policy": "vllm", "capacity_tokens": 30000,
                               "max_num_batched_tokens": 8000, "request_tracking": True}}},
}


# the same with no per-engine token budget (the artifact's was 262,144, the default): apps stay
# on the engine holding their prompt, which runs short of KV blocks (the Parrot engine's
# repeated-iteration path)
GPTS_VARIANTS["parrot_unbounded"] = {
    "client": GPTS_VARIANTS["parrot"]["client"],
    "cluster": {**GPTS_VARIANTS["parrot"]["cluster"],
                "scheduler": {**GPTS_VARIANTS["parrot"]["cluster"]["scheduler"],
                              "tokens_capacity": None}}}


def chat_config(engines: int, calls: int, rate: float | None = None) -> dict:
    rate = engines * CHAT_RATE_PER_ENGINE if rate is None else rate
    return {"workload": {"kind": "sharegpt", "num_requests": calls, "rate": rate},
            "cluster": {"engines": engines, "engine": {"policy": "vllm"}}}


def gpts_config(engines: int, calls: int, variant: str) -> dict:
    raw = {"workload": {"kind": "gpts", "num_requests": calls,
                        "rate": engines * GPTS_RATE_PER_ENGINE},
           "cluster": {"engines": engines, "profile": "a6000_llama-7b"}}
    extra = GPTS_VARIANTS[variant]
    raw["cluster"].update(extra["cluster"])
    if "client" in extra:
        raw["client"] = extra["client"]
    return raw


def run_one(raw: dict) -> dict:
    """Simulate one config in this process, timing its phases (build apps, set-up, event
    loop, tables); the set-up is what the run takes beyond the other three."""
    phases = {"loop": 0.0, "tables": 0.0}
    env_run, run_result = simpy.Environment.run, simulation.run_result

    def timed_run(self, *args, **kwargs):
        start = time.perf_counter()
        try:
            return env_run(self, *args, **kwargs)
        finally:
            phases["loop"] += time.perf_counter() - start

    def timed_tables(*args, **kwargs):
        start = time.perf_counter()
        try:
            return run_result(*args, **kwargs)
        finally:
            phases["tables"] += time.perf_counter() - start

    simpy.Environment.run = timed_run
    simulation.run_result = timed_tables
    collecting = {"since": 0.0, "gc": 0.0}

    def time_collections(phase: str, _info: dict) -> None:
        if phase == "start":
            collecting["since"] = time.process_time()
        else:
            collecting["gc"] += time.process_time() - collecting["since"]

    gc.callbacks.append(time_collections)
    cfg = RunConfig.model_validate(raw)
    cpu = time.process_time()
    start = time.perf_counter()
    apps = simulation.build_apps(cfg)
    built = time.perf_counter()
    result = simulation.simulate(cfg, apps=apps, validate=False)  # build_apps validated them
    end = time.perf_counter()
    cpu = time.process_time() - cpu
    phases["build"] = built - start
    phases["setup"] = (end - built) - phases["loop"] - phases["tables"]
    calls = int(result.summary["calls"])
    eng = result.engines
    mean_batch = float((eng["mean_batch"] * eng["iterations"]).sum() / eng["iterations"].sum())
    return {"mean_batch": mean_batch, "calls": calls, "events": result.events, "wall_s": end - start, "cpu_s": cpu,
            "mean_jct": float(result.summary["mean_jct"]), **phases, "gc_s": collecting["gc"],
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def in_subprocess(raw: dict, flag: str = "--one") -> dict:
    out = subprocess.run([sys.executable, __file__, flag, json.dumps(raw)],
                         check=True, capture_output=True, text=True)
    return json.loads(out.stdout.splitlines()[-1])


def run_skeleton(spec: dict) -> dict:
    """``bench/sim_floor.py``'s skeleton at ``spec``'s engines, calls and rate, timed."""
    wall, events, done = skeleton(spec["calls"], spec["engines"], spec["rate"])
    return {"calls": done, "events": events, "wall_s": wall}


def chat_pair(engines: int, calls: int, repeats: int) -> tuple[dict, float]:
    """The simulator's chat run (the median by wall time of ``repeats``) and the skeleton's
    median us per call on the same engines, calls and rate, run alternately."""
    rows, skel = [], []
    spec = {"engines": engines, "calls": calls, "rate": engines * CHAT_RATE_PER_ENGINE}
    for _ in range(repeats):
        rows.append(in_subprocess(chat_config(engines, calls)))
        sk = in_subprocess(spec, "--one-skeleton")
        skel.append(1e6 * sk["wall_s"] / sk["calls"])
    rows.sort(key=lambda r: r["wall_s"])
    return rows[len(rows) // 2], statistics.median(skel)


def report(name: str, row: dict) -> None:
    calls, wall = row["calls"], row["wall_s"]
    print(f"{name:34s} calls={calls:8d} {calls / wall:8.0f} calls/s {1e6 * wall / calls:7.1f} "
          f"us/call (cpu {1e6 * row['cpu_s'] / calls:7.1f}) {row['events'] / calls:5.1f} ev/call "
          f"(cpu {1e6 * row['cpu_s'] / row['events']:5.1f} us/ev, batch {row['mean_batch']:5.1f}) | build {row['build']:6.2f} "
          f"setup {row['setup']:6.2f} loop {row['loop']:7.2f} tables {row['tables']:6.2f} s "
          f"(gc {row['gc_s']:5.2f} s cpu) | "
          f"peak {row['peak_rss_mb']:6.0f} MB", flush=True)


def _ints(text: str) -> list[int]:
    return [int(float(x)) for x in text.split(",") if x]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--engines", type=_ints, default=None,
                    help="chat engine counts (default 8,64,256,1024)")
    ap.add_argument("--calls", type=_ints, default=None,
                    help="chat call counts (default 1e4, plus 1e5 on 8, 64, 1024 engines)")
    ap.add_argument("--gpts-engines", type=_ints, default=[64, 256])
    ap.add_argument("--gpts-calls", type=int, default=4000)
    ap.add_argument("--batch-calls", type=int, default=20_000)
    ap.add_argument("--only", choices=("chat", "gpts", "batch"), default=None)
    ap.add_argument("--repeats", type=int, default=1,
                    help="runs of each chat configuration (medians reported)")
    ap.add_argument("--one", help=argparse.SUPPRESS)  # a config's JSON: run it here
    ap.add_argument("--one-skeleton", help=argparse.SUPPRESS)  # the skeleton's spec: run it
    args = ap.parse_args()
    if args.one:
        print(json.dumps(run_one(json.loads(args.one))))
        return
    if args.one_skeleton:
        print(json.dumps(run_skeleton(json.loads(args.one_skeleton))))
        return
    if args.only in (None, "batch"):
        for engines in (8, 64):
            report(f"batch: chat {args.batch_calls} on {engines}",
                   in_subprocess(chat_config(engines, args.batch_calls, BATCH_RATE)))
    if args.only in (None, "chat"):
        if args.engines is None and args.calls is None:
            grid = ([(e, 10_000) for e in (8, 64, 256, 1024)]
                    + [(e, 100_000) for e in (8, 64, 1024)])
        else:
            grid = [(e, c) for c in (args.calls or [10_000])
                    for e in (args.engines or [8, 64, 256, 1024])]
        per_call: dict[int, list[tuple[int, float, float]]] = {}
        for engines, calls in grid:
            row, skel_us = chat_pair(engines, calls, args.repeats)
            report(f"chat {calls} on {engines}", row)
            model_us = 1e6 * row["wall_s"] / row["calls"]
            print(f"{'  skeleton, same engines and rate':34s} {skel_us:7.1f} us/call; "
                  f"simulator minus skeleton {model_us - skel_us:7.1f} us/call", flush=True)
            per_call.setdefault(calls, []).append((engines, model_us, skel_us))
        for calls, rows in per_call.items():
            base = min(rows)
            for engines, model_us, skel_us in sorted(rows)[1:]:
                print(f"chat {calls}: {engines} vs {base[0]} engines per call: simulator "
                      f"{model_us / base[1]:.2f}x (+{model_us - base[1]:.1f} us), skeleton "
                      f"{skel_us / base[2]:.2f}x (+{skel_us - base[2]:.1f} us)", flush=True)
    if args.only in (None, "gpts"):
        for engines in args.gpts_engines:
            rows = {}
            for variant in GPTS_VARIANTS:
                rows[variant] = row = in_subprocess(gpts_config(engines, args.gpts_calls, variant))
                report(f"gpts {variant} {args.gpts_calls} on {engines}", row)
            base = rows["least_queue_vllm"]
            for name in ("parrot", "parrot_unbounded"):
                parrot = rows[name]
                print(f"gpts {name} / least_queue_vllm per call on {engines}: "
                      f"{parrot['wall_s'] / parrot['calls'] / (base['wall_s'] / base['calls']):.2f}x "
                      f"(cpu {parrot['cpu_s'] / parrot['calls'] / (base['cpu_s'] / base['calls']):.2f}x)",
                      flush=True)


if __name__ == "__main__":
    main()
