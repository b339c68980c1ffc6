"""Fig 15's iteration times recovered from the artifact's per-request latencies, real and simulated.

    python bench/bing_iterations.py

The artifact's Fig 15 microbenchmark ran a fixed slot pool over Parrot's runner, so every
printed latency is a sum of known iterations (:mod:`parrotsim.calibrate.bing_pool`). Each run's
iterations are fitted by least squares as ``seconds(i) = a + b * generates(i) + f *
fill_tokens(i)`` (``a``: a decode iteration's fixed part - weights, a shared prefix read once;
``b``: each Generate's own KV; ``f``: each filled token) on its 64 latencies, and the same
estimator is applied to the simulated run of the same variant and batch (``paper/fig15``; its
schedule has no duplicated request). Printed per run: the decode step at B Generates
(``a + b*B``, ms), ``f`` (ms per token), ``a`` (ms) and the fit's median |error| per request, real
and simulated, and their ratios. Data: ``calibrate/measurements/artifact_runs/fig15_requests.csv``
(the printed per-request times) and the prompt and output tables of
:mod:`parrotsim.workloads.bing`. Then Fig 16a's re-run (``fig16_runs.csv``, batch 32: 9 waves
of 32 requests all generating one output length) gives the decode step and a wave's fill from
its mean latency at the four output lengths, and the simulated runs the same.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from parrotsim.api import load_experiment, simulate
from parrotsim.calibrate.bing_pool import fit, pool_schedule
from parrotsim.workloads.bing import SHARED_PREFIX_TOKENS, sampled_outputs, shuffled_prompt_lengths

DATA = Path(__file__).resolve().parents[1] / "calibrate" / "measurements" / "artifact_runs"
MODES = {"parrot_shared": "parrot", "vllm_shared": "baseline_with_sharing",
         "vllm_diverged": "baseline_without_sharing"}


def _fills(mode: str, prompts: list[int]) -> list[int]:
    return [p - SHARED_PREFIX_TOKENS if mode != "vllm_diverged" else p for p in prompts]


def simulated(variant: str, batch: int) -> list[float]:
    """The simulated latency (first fill iteration to the last token) of requests 0..63."""
    for run in load_experiment("paper/fig15").runs:
        if (run.labels["variant"] == variant
                and int(run.labels["cluster.scheduler.slots"]) == batch):
            calls = simulate(run.config).calls
            lat = (calls["finished"] - calls["admitted"]).to_numpy()
            order = calls["app_id"].str.removeprefix("bing-").astype(int).to_numpy()
            out = np.empty(len(lat))
            out[order] = lat
            return out.tolist()
    raise KeyError((variant, batch))


def main() -> None:
    real = pd.read_csv(DATA / "fig15_requests.csv")
    outputs = sampled_outputs()
    prompts = shuffled_prompt_lengths()[:len(outputs)]
    print("Fig 15 iterations, fitted to each run's per-request latencies "
          "(seconds(i) = a + b*generates + f*fill_tokens)")
    print(f"{'mode':14s} {'B':>3s} | {'real: step@B ms':>15s} {'f ms/tok':>8s} {'a ms':>6s} "
          f"{'fit err':>7s} | {'sim: step@B':>11s} {'f':>6s} {'a':>6s} {'fit err':>7s} | "
          "step sim/real  fill sim/real")
    for (mode, batch), rows in real.groupby(["mode", "batch"], sort=False):
        fills = _fills(mode, prompts)
        coef, err = fit(pool_schedule(fills, outputs, batch, True),
                        rows.sort_values("completion_order")["latency_s"].tolist())
        sim_lat = simulated(MODES[mode], batch)
        sched = pool_schedule(fills, outputs, batch, False)
        sim_coef, sim_err = fit(sched, [sim_lat[p] for p, _, _ in sched.done])
        step, sim_step = coef[0] + coef[1] * batch, sim_coef[0] + sim_coef[1] * batch
        print(f"{mode:14s} {batch:3d} | {1e3 * step:15.1f} {1e3 * coef[2]:8.3f} "
              f"{1e3 * coef[0]:6.1f} {100 * np.median(np.abs(err)):6.1f}% | "
              f"{1e3 * sim_step:11.1f} {1e3 * sim_coef[2]:6.3f} {1e3 * sim_coef[0]:6.1f} "
              f"{100 * np.median(np.abs(sim_err)):6.1f}% | {sim_step / step:13.2f} "
              f"{sim_coef[2] / coef[2]:13.2f}")
    fig16_waves()


def fig16_waves() -> None:
    """Fig 16a's re-run ran 9 waves of 32 requests with one output length: a wave is the fill
    of its 32 suffixes, then one decode step per output token, so the mean latency over the
    four output lengths is a line, ``fill + output * step``; fitted to the re-run's and to the
    simulated means."""
    real = pd.read_csv(DATA / "fig16_runs.csv")
    real = real[real["batch"] == 32]
    sim: dict[tuple[str, int], float] = {}
    for run in load_experiment("paper/fig16").runs:
        if int(run.labels["cluster.scheduler.slots"]) == 32:
            key = (run.labels["variant"], int(run.labels["workload.output_len"]))
            sim[key] = simulate(run.config).summary["mean_slot_latency"]
    print("\nFig 16a (batch 32, outputs 200-800): mean latency = fill + output * step, "
          "fitted over the four outputs")
    for system, rows in real.groupby("system", sort=False):
        outs = rows["output_len"].to_numpy()
        step, fill = np.polyfit(outs, rows["mean_latency_s"].to_numpy(), 1)
        sim_step, sim_fill = np.polyfit(outs, [sim[(system, int(o))] for o in outs], 1)
        print(f"  {system:22s} real: step {1e3 * step:5.1f} ms, wave fill {fill:4.2f} s | "
              f"sim: {1e3 * sim_step:5.1f} ms, {sim_fill:4.2f} s | sim/real: step "
              f"{sim_step / step:4.2f}, fill {sim_fill / fill:4.2f}")


if __name__ == "__main__":
    main()
