"""How far two real replays of the same experiment differ: the floor under any simulator error.

    python -m parrotsim.calibrate.replay.repeat FIRST_DIR SECOND_DIR

Both folders are outputs of ``python -m parrotsim.calibrate.replay`` for the same experiment
(same runs, same seeds: the same workload and, with the loop being the simulator's own
policies, the same decisions wherever timing allows). For each run present in both, the
second replay's calls are scored against the first's exactly as ``compare`` scores the
simulator's (:func:`parrotsim.calibrate.replay.compare.request_errors`): per-request E2E, TTFT
and TPOT median absolute difference and the difference of the means, plus preemptions and
decode host time per iteration of each. A simulator cannot be held closer to one real run than
a second real run is.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from parrotsim.calibrate.replay.compare import replayed_runs, request_errors

ROWS = [("E2E median |diff| %", "e2e_median_err"), ("E2E mean diff %", "e2e_mean_bias"),
        ("E2E p90 diff %", "e2e_p90_bias"), ("TTFT median |diff| %", "ttft_median_err"),
        ("TPOT median |diff| %", "tpot_median_err"), ("TPOT mean diff %", "tpot_mean_bias")]


def _host_ms(iterations: pd.DataFrame) -> float:
    """Median host time of decode-only iterations (ms): wall + post - GPU."""
    dec = iterations[(iterations["prefill_seqs"] == 0) & (iterations["decode_seqs"] > 0)]
    return float((dec["wall_s"] + dec["post_s"] - dec["gpu_s"]).median() * 1e3)


def repeat_table(first: Path, second: Path) -> pd.DataFrame:
    """One column per run found in both replays (rows: :data:`ROWS`, preemptions, host time)."""
    mine = {p.name: p for p in replayed_runs(second)}
    cols = {}
    for run in replayed_runs(first):
        if run.name not in mine:
            continue
        other = mine[run.name]
        err = request_errors(pd.read_parquet(run / "calls.parquet"),
                             pd.read_parquet(other / "calls.parquet"))
        col = {label: round(100 * err[key], 1) for label, key in ROWS}
        a, b = (pd.read_parquet(p / "iterations.parquet") for p in (run, other))
        pre = [int(pd.read_parquet(p / "calls.parquet")["preemptions"].sum())
               for p in (run, other)]
        col["preemptions first/second"] = f"{pre[0]}/{pre[1]}"
        col["decode host ms first/second"] = f"{_host_ms(a):.3f}/{_host_ms(b):.3f}"
        cols[run.name] = col
    return pd.DataFrame(cols)


def main(argv: list[str] | None = None) -> int:
    """Command line: print the table."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("first", type=Path)
    ap.add_argument("second", type=Path)
    args = ap.parse_args(argv)
    table = repeat_table(args.first, args.second)
    if table.empty:
        raise SystemExit(f"{args.first} and {args.second} share no replayed run")
    print(table.to_string())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
