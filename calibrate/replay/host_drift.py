"""How much the replay host's speed drifts within a run, for the same work (no GPU).

    python -m parrotsim.calibrate.replay.host_drift REAL_DIR [REAL_DIR ...] [--windows 6]

The host time of a decode-only CUDA-graph iteration has parts whose work does not depend on
the load: ``launch_s`` replays one captured graph (the same calls whatever the contexts), and
``build_s`` / ``sched_s`` grow with the sequences in the batch (a few us each). For each run
this splits the run into ``--windows`` equal spans of wall-clock time and prints, per span, the
median of each part over its decode-only graph iterations and the median batch size. The
ratio of the slowest span's median graph launch to the fastest's measures how far the host's
own speed moved during the run: a factor the simulator cannot predict from the workload (its
runtime terms are one number per engine), so it bounds how closely a host-bound part of an
iteration can be modelled.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from parrotsim.calibrate.replay.runtime_fit import run_dirs

PARTS = ["sched_s", "build_s", "launch_s", "post_s"]


def drift_table(iterations: pd.DataFrame, windows: int = 6) -> pd.DataFrame:
    """Per span of the run: median host parts (us) of decode-only graph iterations, the median
    batch, and the iterations counted."""
    it = iterations[(iterations["prefill_seqs"] == 0) & (iterations["graph"] == 1)
                    & (iterations["decode_seqs"] > 0)]
    if it.empty:
        return pd.DataFrame(columns=[*PARTS, "decode_seqs", "iterations"])
    span = pd.cut(it["start"], windows)
    table = it.groupby(span, observed=True)[PARTS].median() * 1e6
    table["decode_seqs"] = it.groupby(span, observed=True)["decode_seqs"].median()
    table["iterations"] = it.groupby(span, observed=True).size()
    table.index = [f"{iv.left:.0f}-{iv.right:.0f} s" for iv in table.index]
    return table


def main(argv: list[str] | None = None) -> int:
    """Command line: print each run's drift table and its launch ratio."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("real", type=Path, nargs="+", help="replay output folders (or runs)")
    ap.add_argument("--windows", type=int, default=6)
    args = ap.parse_args(argv)
    for run in run_dirs(args.real):
        table = drift_table(pd.read_parquet(run / "iterations.parquet"), args.windows)
        if table.empty:
            print(f"== {run.name}: no decode-only graph iterations")
            continue
        ratio = table["launch_s"].max() / table["launch_s"].min()
        print(f"== {run.name}: slowest / fastest span's median graph launch {ratio:.2f}x")
        print(table.round(1).to_string())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
