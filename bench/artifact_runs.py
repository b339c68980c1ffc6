"""The paper profiles against the artifact's own printed results (Figs 14a, 15, 16, 17, 18, 19).

    python bench/artifact_runs.py [--fig19-seeds 20] [--artifact-kernels]
                                   [--parrot-per-seq-s S] [--set PATH=VALUE ...]

Simulates the shipped paper experiments and prints, next to the numbers the ParrotServe runs
printed (``calibrate/measurements/artifact_runs``), the simulated value and its signed error,
point by point, then the median |error| per figure and over all points. The points and their
matching are the report's (:mod:`parrotsim.reports.ground_truth`, the report's "Against the
artifact's own runs" section); this script adds the what-ifs the report does not run:

* Fig 19 also against the ``paper`` campaign (the 5 runs behind the paper's bars), beside the
  artifact's re-run, over the experiment's first ``--fig19-seeds`` seeds;
* ``--artifact-kernels`` runs the kernels the artifact ran (``cluster.paged_kernel: vllm_0_1_4``
  everywhere, ``cluster.kernel: parrot_2023`` where the experiment has ``shared_prefix``);
* ``--parrot-per-seq-s S`` gives Parrot's engine a host cost of S seconds per sequence per
  iteration (``runtimes.parrot.overhead_per_seq_s`` of a copy of the A6000 profile);
* ``--set PATH=VALUE`` overrides a run config field (dotted path under the run; repeatable).

Only the runs a printed point needs are simulated (Fig 14 at chunk 1024). Nothing is fitted:
these are held-out measurements.
"""

from __future__ import annotations

import argparse
import dataclasses
import tempfile
from pathlib import Path

import pandas as pd
from ruamel.yaml import YAML

from parrotsim.api import RunConfig, load_experiment, simulate
from parrotsim.reports import ground_truth as gt
from parrotsim.sim.harness.config import era_kernel_fields
from parrotsim.sim.model.profile import shipped_profiles

#: Fig 19 against the runs behind the paper's bars too (the report compares the re-run only)
PAPER_CAMPAIGN = dataclasses.replace(next(s for s in gt.SOURCES if s.figure == "fig19"),
                                     figure="fig19 (paper's runs)", where={"campaign": "paper"})


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


def summaries(overrides, era: bool, fig19_seeds: int) -> dict[str, pd.DataFrame]:
    """Experiment name -> one row per simulated run (its labels and summary), as the report's
    results store keeps them, for the runs a printed point needs."""
    out = {}
    for src in gt.SOURCES:
        rows = []
        for run in load_experiment(f"paper/{src.experiment}").runs:
            labels = dict(run.labels)
            if any(labels.get(k) != v for k, v in src.sim_where.items()):
                continue
            if src.figure == "fig19" and run.config.seed >= fig19_seeds:
                continue
            result = simulate(_config(run, overrides, era))
            rows.append({**labels, "seed": run.config.seed, "status": "ok", **result.summary})
        out[src.experiment] = pd.DataFrame(rows)
    return out


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


def show(table: pd.DataFrame) -> None:
    for figure, rows in table.groupby("figure", sort=False):
        print(f"{figure} ({rows['gpu'].iloc[0]}): printed run vs simulated")
        for r in rows.itertuples(index=False):
            print(f"  {r.series:24s} {r.setting:26s} {r.metric:24s} real {r.real:8.2f}  "
                  f"sim {r.simulated:8.2f}  {r.error_pct:+6.1f} %")
    print(gt.by_figure(table).to_string(index=False, float_format="%.1f"))


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
        runs = summaries(overrides, args.artifact_kernels, args.fig19_seeds)
    table = gt.compare(runs)
    show(table)
    print(f"all {gt.summary_line(table, digits=2)}")
    paper = pd.DataFrame(gt.compare_source(PAPER_CAMPAIGN, pd.read_csv(
        gt.DATA_DIR / PAPER_CAMPAIGN.file), runs["fig19"]), columns=gt.COLUMNS)
    show(paper)


if __name__ == "__main__":
    main()
