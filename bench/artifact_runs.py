"""The paper profiles against the artifact's own printed results (Figs 14a, 15, 16, 17, 18, 19).

    python bench/artifact_runs.py [--fig19-seeds 20] [--artifact-kernels]
                                   [--parrot-per-seq-s S] [--set PATH=VALUE ...]

Simulates the shipped paper experiments and prints, next to the numbers the ParrotServe runs
printed (``calibrate/measurements/artifact_runs``), the simulated value and its signed error:

* Fig 14a (one A100-80GB, LLaMA-13B, map-reduce at chunk 1024): each system's mean JCT over the
  10 documents at each output length, the artifact's re-run;
* Fig 15 (one A100-80GB, LLaMA-7B, Bing Copilot): each system's mean request latency at each
  batch size, the artifact's re-run (the mean of its printed per-request times);
* Fig 16 (the same, every request generating a fixed output): each system's mean request
  latency at batch 32 (all 288 prompts) and 64 (one wave of 64), the artifact's re-run (its
  loop's wall time over the waves of requests it ran);
* Fig 18 (one A100-80GB, LLaMA-13B): each system's time for the 10 MetaGPT rounds at 4, 8,
  12 and 16 files, the artifact's re-run;

* Fig 17: each system's mean normalized latency (ms per output token) at every request rate
  the artifact ran that the experiment sweeps;
* Fig 19: each system's chat normalized latency, chat decode time and map-reduce JCT, the
  simulated mean over the experiment's first ``--fig19-seeds`` seeds against the mean of each
  campaign's 5 runs (``paper``: the runs behind the paper's bars; ``artifact``: its re-run).

``--artifact-kernels`` runs the kernels the artifact ran (``cluster.paged_kernel: vllm_0_1_4``
everywhere, ``cluster.kernel: parrot_2023`` where the experiment has ``shared_prefix``);
``--parrot-per-seq-s S`` gives Parrot's engine a host cost of S seconds per sequence per iteration
(``runtimes.parrot.overhead_per_seq_s`` of a copy of the A6000 profile; a what-if, not shipped);
``--set PATH=VALUE`` overrides a run config field (dotted path under the run; repeatable).
Nothing is fitted: these are held-out measurements.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
from ruamel.yaml import YAML

from parrotsim.api import RunConfig, load_experiment, simulate
from parrotsim.sim.harness.config import era_kernel_fields
from parrotsim.sim.model.profile import shipped_profiles

DATA = Path(__file__).resolve().parents[1] / "calibrate" / "measurements" / "artifact_runs"
FIG19_METRICS = {"chat_normalized_latency_ms": "chat_normalized_latency",
                 "chat_decode_time_ms": "chat_decode_time", "mr_jct_s": "mean_jct_map_reduce"}


def _config(run, overrides: list[tuple[list[str], str]], era: bool = False) -> RunConfig:
    data = run.config.model_dump(mode="json")
    if era:
        data["cluster"].update(era_kernel_fields(run.config.cluster))
    for path, value in overrides:
        node = data
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value
    return RunConfig.model_validate(data)


def compare(title: str, experiment: str, want: dict[tuple[str, float], float], axis: str,
            metric: str, overrides, era: bool, keep=lambda run: True) -> None:
    """Print, per (variant, ``axis`` value) in ``want``, the real value, the simulated
    ``metric`` (the mean over the experiment's matching runs) and the signed error."""
    sims: dict[tuple[str, float], list[float]] = {}
    for run in load_experiment(experiment).runs:
        key = (run.labels["variant"], float(run.labels[axis]))
        if key in want and keep(run):
            sims.setdefault(key, []).append(
                simulate(_config(run, overrides, era)).summary[metric])
    print(title)
    for key in sorted(sims):
        sim, real = float(np.mean(sims[key])), want[key]
        print(f"  {key[0]:24s} {axis.split('.')[-1]} {key[1]:6g}  real {real:8.2f}  "
              f"sim {sim:8.2f}  {100 * (sim / real - 1):+6.1f} %")


def fig14(overrides, era: bool) -> None:
    real = pd.read_csv(DATA / "fig14_output_len.csv")
    want = {(s, float(o)): v
            for (s, o), v in real.groupby(["system", "output_len"])["jct_s"].mean().items()}
    compare("Fig 14a, map-reduce JCT at chunk 1024, mean of 10 documents (s): re-run vs "
            "simulated", "paper/fig14", want, "workload.output_len", "mean_jct", overrides, era,
            keep=lambda run: int(run.labels["workload.chunk_size"]) == 1024)


def fig15(overrides, era: bool) -> None:
    real = pd.read_csv(DATA / "fig15_latency.csv")
    compare("Fig 15, Bing mean request latency (s): artifact re-run vs simulated",
            "paper/fig15", {(r.system, float(r.batch)): r.mean_latency_s
                            for r in real.itertuples()},
            "cluster.scheduler.slots", "mean_slot_latency", overrides, era)


def fig16(overrides, era: bool) -> None:
    """Fig 16's re-run: at batch 32 the 288 prompts in file order (9 waves of 32 requests); at
    batch 64 one wave of the first 64 shuffled prompts (the experiment runs both so)."""
    real = pd.read_csv(DATA / "fig16_runs.csv")
    want = {(r.system, int(r.batch), int(r.output_len)): r.mean_latency_s
            for r in real.itertuples()}
    print("Fig 16, Bing mean request latency (s), fixed output: artifact re-run vs simulated")
    for run in load_experiment("paper/fig16").runs:
        batch = int(run.labels["cluster.scheduler.slots"])
        key = (run.labels["variant"], batch, int(run.labels["workload.output_len"]))
        if key not in want:
            continue
        sim = simulate(_config(run, overrides, era)).summary["mean_slot_latency"]
        print(f"  {key[0]:24s} slots {batch:3d} output {key[2]:4d}  real {want[key]:8.2f}  "
              f"sim {sim:8.2f}  {100 * (sim / want[key] - 1):+6.1f} %")


def fig17(overrides, era: bool) -> None:
    real = pd.read_csv(DATA / "fig17_normalized_latency.csv")
    compare("Fig 17, normalized latency (ms/token): artifact re-run vs simulated",
            "paper/fig17", {(r.series, float(r.rate)): r.normalized_latency_ms
                            for r in real.itertuples()},
            "workload.rate", "normalized_latency", overrides, era)


def fig18(overrides, era: bool) -> None:
    real = pd.read_csv(DATA / "fig18_jct.csv")
    compare("Fig 18, MetaGPT time for 10 rounds (s): artifact re-run vs simulated",
            "paper/fig18", {(r.system, float(r.files)): r.jct_s for r in real.itertuples()},
            "workload.files", "mean_jct", overrides, era)


def fig19(overrides, seeds: int, era: bool) -> None:
    real = pd.read_csv(DATA / "fig19_runs.csv")
    sims: dict[str, dict[str, list[float]]] = {}
    for run in load_experiment("paper/fig19").runs:
        if run.config.seed >= seeds:
            continue
        summary = simulate(_config(run, overrides, era)).summary
        per = sims.setdefault(run.labels["variant"], {k: [] for k in FIG19_METRICS})
        for column, metric in FIG19_METRICS.items():
            per[column].append(summary[metric])
    print(f"Fig 19: mean of 5 real runs per campaign vs simulated mean over {seeds} seeds")
    for system, per in sims.items():
        for column in FIG19_METRICS:
            sim = float(np.mean(per[column]))
            line = f"  {system:20s} {column:28s} sim {sim:8.2f}"
            for campaign in ("paper", "artifact"):
                rows = real[(real.system == system) & (real.campaign == campaign)]
                value = float(rows[column].mean())
                line += f" | {campaign} {value:8.2f} ({100 * (sim / value - 1):+5.0f} %)"
            print(line)


def per_seq_profile(seconds: float, folder: Path) -> str:
    """A copy of the A6000 profile whose Parrot runtime pays ``seconds`` per sequence per
    iteration; returns its path."""
    yaml = YAML()
    data = yaml.load(shipped_profiles()["a6000_llama-7b"].read_text())
    data["runtimes"]["parrot"]["overhead_per_seq_s"] = seconds
    path = folder / "a6000_llama-7b-per-seq.yaml"
    with path.open("w") as f:
        yaml.dump(data, f)
    return str(path)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fig19-seeds", type=int, default=20)
    ap.add_argument("--artifact-kernels", action="store_true")
    ap.add_argument("--parrot-per-seq-s", type=float, default=None)
    ap.add_argument("--set", action="append", default=[], metavar="PATH=VALUE")
    args = ap.parse_args()
    overrides = []
    for item in args.set:
        path, _, value = item.partition("=")
        if not value:
            ap.error(f"--set {item}: expected PATH=VALUE")
        overrides.append((path.split("."), value))
    with tempfile.TemporaryDirectory() as tmp:
        if args.parrot_per_seq_s is not None:
            overrides.append((["cluster", "profile"], per_seq_profile(args.parrot_per_seq_s,
                                                                      Path(tmp))))
        fig14(overrides, args.artifact_kernels)
        fig15(overrides, args.artifact_kernels)
        fig16(overrides, args.artifact_kernels)
        fig17(overrides, args.artifact_kernels)
        fig18(overrides, args.artifact_kernels)
        fig19(overrides, args.fig19_seeds, args.artifact_kernels)


if __name__ == "__main__":
    main()
