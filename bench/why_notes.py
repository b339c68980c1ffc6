"""The measurements behind the hand-written why-notes of the report (reports/claim_notes.py).

Re-run after any change to the simulator and update the notes' numbers:

    python bench/why_notes.py

Prints, from the shipped paper experiments: Fig 14 with today's split-KV paged kernel (as
shipped) and with vLLM 0.1.4's no-split kernel that the artifact's engines ran
(``cluster.paged_kernel: vllm_0_1_4``): each system's mean JCT and the two claims' ratios; Fig 17
at 12 req/s at seed 0 (share of prompt tokens served from cached prefixes, per-engine peak KV
blocks and memory stalls, calls per engine) and, over its seeds, with the artifact's kernels (``cluster.kernel:
parrot_2023``, one prefix per batch, and the no-split paged kernel), the rates at which Baseline
(vLLM) and Parrot w/o Scheduling cross the report's threshold; Fig 18a at 16 files (iterations
and mean iteration time of the one engine), Fig 19 over its seeds (share of the map-reduce tokens
on the two busiest engines, peak KV fraction, maps' completion after their app's start).
"""

from __future__ import annotations

import numpy as np

from parrotsim.api import RunConfig, RunResult, load_experiment, simulate
from parrotsim.reports.derive import crossing_rate
from parrotsim.sim.harness.config import era_kernel_fields


def results(name: str, **labels) -> list[RunResult]:
    """Simulated results of the experiment's runs whose labels match."""
    return [simulate(r.config) for r in load_experiment(name).runs
            if all(r.labels.get(k) == v for k, v in labels.items())]


def _with(run, **cluster) -> RunResult:
    """``run`` simulated with ``cluster`` fields overridden."""
    data = run.config.model_dump(mode="json")
    data["cluster"].update(cluster)
    return simulate(RunConfig.model_validate(data))


def fig14() -> None:
    for kernel in ("split_kv", "vllm_0_1_4"):
        jct: dict[tuple, list[float]] = {}
        for run in load_experiment("paper/fig14").runs:
            lab = run.labels
            key = (lab["variant"], lab["workload.output_len"], lab["workload.chunk_size"])
            jct.setdefault(key, []).append(_with(run, paged_kernel=kernel).summary["mean_jct"])
        mean = {k: float(np.mean(v)) for k, v in jct.items()}
        a = mean[("baseline_vllm", 100, 1024)] / mean[("parrot", 100, 1024)]
        chunks = sorted({k[2] for k in mean if k[1] == 50})
        b = np.mean([mean[("baseline_vllm", 50, c)] / mean[("parrot", 50, c)] for c in chunks])
        print(f"fig14 paged_kernel {kernel}: output 100 JCT parrot "
              f"{mean[('parrot', 100, 1024)]:.2f} s, baseline {mean[('baseline_vllm', 100, 1024)]:.2f}"
              f" s, ratio {a:.3f}; output 50 mean ratio over chunk sizes {b:.3f}")


def fig17_artifact_kernels() -> None:
    """Crossings on the curves averaged over the experiment's seeds, as the report reads them."""
    for variant in ("baseline_vllm", "parrot_without_affinity"):
        latency: dict[float, list[float]] = {}
        short: dict[float, bool] = {}
        for run in load_experiment("paper/fig17").runs:
            if run.labels["variant"] != variant:
                continue
            s = _with(run, **era_kernel_fields(run.config.cluster)).summary
            rate = run.labels["workload.rate"]
            latency.setdefault(rate, []).append(s["normalized_latency"])
            short[rate] = short.get(rate, False) or (
                run.config.cluster.engine.policy == "parrot" and s["memory_stalls"] > 0)
        points = [(r, float(np.mean(v)), short[r]) for r, v in latency.items()]
        rate, kind, oom = crossing_rate(points)
        print(f"fig17 artifact kernels {variant}: crosses at {rate:.2f} req/s ({kind}"
              f"{', out of KV blocks' if oom else ''})")


def fig17() -> None:
    """Seed 0's runs: where one seed's calls went."""
    for variant in ("parrot", "parrot_without_affinity"):
        (res,) = results("paper/fig17", variant=variant, seed=0, **{"workload.rate": 12})
        calls = res.calls
        cached = calls["cached_len"].sum() / calls["prompt_len"].sum()
        print(f"fig17 12 req/s {variant}: prompt tokens from cached prefixes {cached:.3f}, "
              f"peak KV blocks {res.engines['peak_kv_blocks'].tolist()}, memory stalls "
              f"{res.engines['memory_stalls'].tolist()}, calls per engine "
              f"{calls.groupby('engine').size().tolist()}")
    for rate in (8, 12, 32):
        (res,) = results("paper/fig17", variant="parrot", seed=0, **{"workload.rate": rate})
        calls, engines = res.calls, res.engines
        productivity = calls[calls["app_id"].str.startswith("gpts-productivity")]
        print(f"fig17 {rate} req/s parrot: Productivity calls per engine "
              f"{productivity.groupby('engine').size().to_dict()}, peak KV blocks "
              f"{engines['peak_kv_blocks'].tolist()}, utilization "
              f"{engines['utilization'].round(2).tolist()}")


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
    fig14()
    fig17()
    fig17_artifact_kernels()
    fig18()
    fig19()
