"""``parrotsim report``: regenerate the paper's figures (see ``reports/build.py``)."""

from __future__ import annotations

import argparse
from pathlib import Path

from parrotsim.core.errors import UsageError, output_folder
from parrotsim.reports.build import build_report
from parrotsim.reports.ground_truth import summary_line
from parrotsim.sim.harness.runner import check_writable


def add_parser(sub) -> None:
    p = sub.add_parser("report", help="regenerate every paper figure with the paper's numbers",
                       description=__doc__)
    p.add_argument("--figures", help="comma-separated figure ids (default: all)")
    p.add_argument("--profile", help="hardware profile family to use instead of the paper's "
                   "GPUs: h200 or h100 (the measured profiles, today's kernels)")
    p.add_argument("--out", type=output_folder, default=Path("reports/out"),
                   help="report folder (default: reports/out)")
    p.add_argument("--jobs", type=int, default=None, help="worker processes (default: cores)")
    p.add_argument("--quiet", action="store_true", help="no progress output")
    p.set_defaults(main=main)


#: the claims table as the console shows it (then each miss's why, a line each); claims.csv and
#: index.html have every column
CONSOLE_COLUMNS = ["id", "paper", "simulated", "rerun", "within_15pct", "direction_ok"]


def main(args: argparse.Namespace) -> int:
    figures = [f.strip() for f in args.figures.split(",")] if args.figures else None
    check_writable(args.out)
    try:
        claims = build_report(args.out, figures, args.profile, args.jobs, not args.quiet)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    with_values = claims.dropna(subset=["simulated"])
    print(claims[CONSOLE_COLUMNS].to_string(index=False))
    misses = claims[claims["why"] != ""]
    if len(misses):
        print("\nwhy (measured detail: why_detail in claims.csv):")
        for row in misses.itertuples(index=False):
            print(f"  {row.id}: {row.why}")
    truth = args.out / "ground_truth.csv"
    if truth.is_file():
        import pandas as pd

        print(f"\nagainst the artifact's own printed runs: "
              f"{summary_line(pd.read_csv(truth))} ({truth})")
    print(f"\n{int(with_values['within_15pct'].sum())} of {len(claims)} headline claims within "
          f"15 %; report in {args.out}/index.html")
    return 0
