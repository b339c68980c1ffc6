"""The measurements behind the hand-written why-notes of the report (reports/claim_notes.py).

Re-run after any change to the simulator and update the notes' numbers:

    python bench/why_notes.py

Prints, from the shipped paper experiments: Fig 17 at 12 req/s (share of prompt tokens served
from cached prefixes, per-engine peak KV blocks and memory stalls, calls per engine), Fig 18a at
16 files (iterations and mean iteration time of the one engine), Fig 19 over its seeds (share of
the map-reduce tokens on the two busiest engines, peak KV fraction, maps' completion after their
app's start).
"""

from __future__ import annotations

import numpy as np

from parrotsim.api import RunResult, load_experiment, simulate


def results(name: str, **labels) -> list[RunResult]:
    """Simulated results of the experiment's runs whose labels match."""
    return [simulate(r.config) for r in load_experiment(name).runs
            if all(r.labels.get(k) == v for k, v in labels.items())]


def fig17() -> None:
    for variant in ("parrot", "parrot_without_affinity"):
        (res,) = results("paper/fig17", variant=variant, **{"workload.rate": 12})
        calls = res.calls
        cached = calls["cached_len"].sum() / calls["prompt_len"].sum()
        print(f"fig17 12 req/s {variant}: prompt tokens from cached prefixes {cached:.3f}, "
              f"peak KV blocks {res.engines['peak_kv_blocks'].tolist()}, memory stalls "
              f"{res.engines['memory_stalls'].tolist()}, calls per engine "
              f"{calls.groupby('engine').size().tolist()}")


def fig18() -> None:
    for variant in ("parrot", "parrot_paged_attention", "baseline_throughput"):
        (res,) = results("paper/fig18", variant=variant, **{"workload.files": 16})
        engine = res.engines.iloc[0]
        print(f"fig18a 16 files {variant}: {int(engine['iterations'])} iterations of "
              f"{1e3 * engine['busy_time'] / engine['iterations']:.1f} ms, "
              f"JCT {res.summary['mean_jct']:.1f} s")


def fig19() -> None:
    for variant in ("parrot", "baseline_throughput"):
        shares, peaks, maps_done = [], [], []
        for res in results("paper/fig19", variant=variant):
            mr = res.calls[res.calls["app_kind"] == "map_reduce"]
            tokens = (mr["prompt_len"] + mr["output_len"]).groupby(mr["engine"]).sum()
            shares.append(tokens.nlargest(2).sum() / tokens.sum())
            peaks.append((res.engines["peak_kv_blocks"] / res.engines["kv_blocks"]).max())
            maps = mr[~mr["call"].str.startswith("reduce")]
            arrival = res.apps.set_index("app_id")["arrival"]
            done = maps.groupby("app_id")["finished"].max()
            maps_done.append((done - arrival.reindex(done.index)).mean())
        print(f"fig19 {variant}: two busiest engines' share of map-reduce tokens "
              f"{np.mean(shares):.2f}, peak KV fraction {np.mean(peaks):.3f}, maps done "
              f"{np.mean(maps_done):.1f} s after their app started")


if __name__ == "__main__":
    fig17()
    fig18()
    fig19()
