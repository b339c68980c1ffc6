"""How Fig 19's map-reduce claim depends on how loaded the simulated cluster is.

The paper's 'map-reduce JCT vs Baseline (Throughput)' is 1.05x (Parrot 23.2 s, baseline 24.5 s:
the paper-era runs in the ParrotServe repository, benchmark/mixed_serving/results/main/
parrot_main.log and benchmark/chat+mr/results/vllm_tput.txt); the artifact's re-run gives 0.92x
(artifact/figure18/result_parrot.txt, result_vllm_thr.txt). Both systems took about 23 s per
app, so the bursts of maps (every 11 s) overlapped; the simulated apps take 9.0-13.0 s. This
script scales the A6000 profile's iteration costs (prefill and decode, both runtimes alike: a
what-if, not a calibration) and prints each system's mean map-reduce JCT and the claim's ratio:

    python bench/fig19_load.py [--seeds 20] [--scales 1,1.5,1.8,2] [--fig17]

A pair ``P:D`` scales prefill iterations by P and decode iterations by D. ``--fig17`` also prints,
on the same scaled profile, Fig 17's Baseline (vLLM) against the artifact's re-run (its mean over
the experiment's seeds at each printed rate, signed error): the same A6000 profile serves both
figures, so a scale that mends one must not break the other.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
from ruamel.yaml import YAML

from parrotsim.api import RunConfig, load_experiment, simulate
from parrotsim.reports.ground_truth import DATA_DIR
from parrotsim.sim.model.profile import shipped_profiles

VARIANTS = ("parrot", "baseline_throughput")


def scaled_profile(name: str, prefill: float, decode: float, folder: Path) -> str:
    """Write ``name`` with every runtime's iteration costs scaled; return the file's path."""
    yaml = YAML()
    data = yaml.load(shipped_profiles()[name].read_text())
    for rt in data["runtimes"].values():
        rt["prefill_scale"] = float(rt["prefill_scale"]) * prefill
        rt["scale"] = float(rt["scale"]) * decode
    path = folder / f"{name}-p{prefill}-d{decode}.yaml"
    with path.open("w") as f:
        yaml.dump(data, f)
    return str(path)


def mean_jct(profile: str | None, seeds: int) -> dict[str, float]:
    """Mean map-reduce JCT (s) of each variant of paper/fig19 over its first ``seeds`` seeds."""
    out: dict[str, list[float]] = {v: [] for v in VARIANTS}
    for run in load_experiment("paper/fig19").runs:
        variant = run.labels["variant"]
        if variant not in out or run.config.seed >= seeds:
            continue
        data = run.config.model_dump(mode="json")
        if profile is not None:
            data["cluster"]["profile"] = profile
        res = simulate(RunConfig.model_validate(data))
        out[variant].append(res.summary["mean_jct_map_reduce"])
    return {v: float(np.mean(x)) for v, x in out.items()}


def fig17_baseline(profile: str | None) -> str:
    """Fig 17's Baseline (vLLM) at the re-run's rates: simulated ms/token and signed error."""
    real = pd.read_csv(DATA_DIR / "fig17_normalized_latency.csv")
    real = real[real["series"] == "baseline_vllm"].set_index("rate")["normalized_latency_ms"]
    sims: dict[float, list[float]] = {}
    for run in load_experiment("paper/fig17").runs:
        rate = float(run.labels["workload.rate"])
        if run.labels["variant"] != "baseline_vllm" or rate not in real.index:
            continue
        data = run.config.model_dump(mode="json")
        if profile is not None:
            data["cluster"]["profile"] = profile
        sims.setdefault(rate, []).append(
            simulate(RunConfig.model_validate(data)).summary["normalized_latency"])
    return ", ".join(f"{r:g} req/s {np.mean(v):.0f} ms ({100 * (np.mean(v) / real[r] - 1):+.0f} %)"
                     for r, v in sorted(sims.items()))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--scales", default="1,1.5,1.6,1.8,2,2:1.25")
    ap.add_argument("--fig17", action="store_true")
    args = ap.parse_args()
    base = load_experiment("paper/fig19").runs[0].config.cluster.profile
    with tempfile.TemporaryDirectory() as tmp:
        for item in args.scales.split(","):
            p, _, d = item.partition(":")
            prefill, decode = float(p), float(d or p)
            profile = None if prefill == decode == 1 else scaled_profile(
                base, prefill, decode, Path(tmp))
            jct = mean_jct(profile, args.seeds)
            ratio = jct["baseline_throughput"] / jct["parrot"]
            print(f"prefill x{prefill:<4} decode x{decode:<4}: Parrot {jct['parrot']:5.1f} s, "
                  f"Baseline (Throughput) {jct['baseline_throughput']:5.1f} s, "
                  f"ratio {ratio:.3f} (paper 1.05; artifact re-run 0.92)")
            if args.fig17:
                print(f"    Fig 17 Baseline (vLLM) vs its re-run: {fig17_baseline(profile)}")


if __name__ == "__main__":
    main()
