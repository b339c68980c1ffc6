"""Fig 19's chat series against when the chat stream starts relative to the map-reduce bursts.

The artifact started both clients at a barrier (artifact/figure18/start_benchmark_*.py): the
chat client then loaded ShareGPT V3 (about 94,000 conversations) and tokenized the first two
turns of every one before its first request, while the map-reduce client slept 15 s ("Chat
needs some time to load ShareGPT") and started. The simulated experiment has the chats from
t = 0 and the first app at ``mr_start`` = 15 s, i.e. a loading time of zero; the real one is
not known here (the dataset is not reachable from this machine). This what-if moves the bursts
earlier against the chats (``mr_start`` below 15 s = the chat client started that much later)
and prints, per system, the mean over seeds of the chat normalized latency, chat decode time
and map-reduce JCT beside the artifact's re-run (calibrate/measurements/artifact_runs):

    python bench/fig19_chat_start.py [--seeds 20] [--starts 15,10,5,0]
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd

from parrotsim.api import RunConfig, load_experiment, simulate
from parrotsim.reports.ground_truth import DATA_DIR

METRICS = {"chat_normalized_latency": "chat_normalized_latency_ms",
           "chat_decode_time": "chat_decode_time_ms", "mean_jct_map_reduce": "mr_jct_s"}


def means(mr_start: float, seeds: int) -> dict[str, dict[str, float]]:
    """System -> metric -> mean over the experiment's first ``seeds`` seeds."""
    runs: dict[str, list[dict]] = {}
    for run in load_experiment("paper/fig19").runs:
        if run.config.seed >= seeds:
            continue
        data = run.config.model_dump(mode="json")
        data["workload"]["mr_start"] = mr_start
        runs.setdefault(run.labels["variant"], []).append(
            simulate(RunConfig.model_validate(data)).summary)
    return {v: {m: float(np.mean([r[m] for r in rows])) for m in METRICS}
            for v, rows in runs.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--starts", default="15,10,5,0")
    args = ap.parse_args()
    real = pd.read_csv(DATA_DIR / "fig19_runs.csv")
    real = real[real["campaign"] == "artifact"].groupby("system")[list(METRICS.values())].mean()
    for start in (float(s) for s in args.starts.split(",")):
        print(f"first map-reduce app at {start:g} s (chats from 0 s):")
        for system, vals in means(start, args.seeds).items():
            cells = [f"{m} {v:.1f} ({100 * (v / real.loc[system, col] - 1):+.0f} %)"
                     for (m, col), v in zip(METRICS.items(), vals.values(), strict=True)]
            print(f"  {system:20s} " + ", ".join(cells))


if __name__ == "__main__":
    main()
