"""How much each headline claim depends on the random draw: every paper figure at N seeds.

The report runs every figure at seed 0 except Fig 19, which averages 20 seeds (which 40 chats
are drawn moves its chat metrics). The seed also draws the other figures' network round
trips, Poisson arrivals and app mixes (Figs 12a, 17), sampled prompts (Figs 15, 16). This
script runs each paper experiment at seeds 0..N-1 (cached in OUT/results/, like the report),
evaluates the claims on each seed alone and prints, per claim, the seed-0 ratio the report
shows beside the mean, the 10th-90th percentile and the range over the seeds, and how many
seeds put it within 15 % of the paper or the other way round:

    python bench/seed_spread.py [--seeds 10] [--out /tmp/seed_spread] [--figures fig17,fig12a]

It also writes OUT/seed_claims.csv (one row per claim and seed). Fig 19's experiment keeps
its 20 seeds; its per-seed ratios are the ones the report already shows as a spread.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd
from ruamel.yaml import YAML

from parrotsim.reports.claims import TOLERANCE, direction, evaluate
from parrotsim.reports.derive import TIDY_COLUMNS, panel_rows
from parrotsim.reports.spec import FIGURES, PANELS
from parrotsim.sim.harness.backends import make_backend
from parrotsim.sim.harness.experiment import experiment_from_data
from parrotsim.sim.harness.runner import prepare_sweep, run_sweeps
from parrotsim.sim.harness.shipped import shipped_experiments


def with_seeds(name: str, seeds: int):
    """The shipped ``paper/<name>`` experiment at seeds 0..``seeds``-1 (Fig 19 keeps its own)."""
    path = shipped_experiments()[f"paper/{name}"]
    data = YAML(typ="safe", pure=True).load(path.read_text())
    if len(data.get("seeds") or [0]) < seeds:
        data["seeds"] = list(range(seeds))
    return experiment_from_data(data, str(path))


def per_seed_claims(figures: list[str], seeds: int, out: Path, jobs: int | None) -> pd.DataFrame:
    """One row per claim and seed: the claim's ratio on that seed's runs alone."""
    panels = [p for p in PANELS if p.figure in figures]
    names = list(dict.fromkeys(p.experiment for p in panels))
    sweeps = [prepare_sweep(with_seeds(n, seeds), out / "results" / n) for n in names]
    summaries: dict[str, pd.DataFrame] = {}
    executor = make_backend("local", jobs)
    try:
        run_sweeps(sweeps, executor, True,
                   on_done=lambda i, frame: summaries.__setitem__(names[i], frame))
    finally:
        executor.close()
    rows = []
    all_seeds = sorted({int(s) for frame in summaries.values() for s in frame["seed"]})
    for seed in all_seeds:
        tidy = []
        for p in panels:
            frame = summaries[p.experiment]
            frame = frame[frame["seed"] == seed]
            if not frame.empty:
                tidy += panel_rows(p, frame, out / "results" / p.experiment)
        claims = evaluate(pd.DataFrame(tidy, columns=TIDY_COLUMNS))
        claims = claims[claims["figure"].isin(figures) & claims["simulated"].notna()]
        rows += [{"id": r.id, "paper": r.paper, "seed": seed, "simulated": r.simulated,
                  "bound": r.bound} for r in claims.itertuples()]
    return pd.DataFrame(rows)


def spread_table(per_seed: pd.DataFrame) -> pd.DataFrame:
    """Per claim: seed 0, mean, 10th-90th percentile, range, and the seeds within 15 % and
    pointing the paper's way."""
    out = []
    for claim_id, g in per_seed.groupby("id", sort=False):
        v, paper = g["simulated"].astype(float), float(g["paper"].iloc[0])
        within = ((v / paper - 1).abs() <= TOLERANCE) & (g["bound"] == "")
        right = [direction(paper, x, b)[0] for x, b in zip(v, g["bound"], strict=True)]
        seed0 = g.loc[g["seed"] == 0, "simulated"]
        out.append({"id": claim_id, "paper": paper, "seeds": len(g),
                    "seed0": float(seed0.iloc[0]) if len(seed0) else np.nan,
                    "mean": v.mean(), "p10": v.quantile(0.1), "p90": v.quantile(0.9),
                    "min": v.min(), "max": v.max(), "cv_pct": 100 * v.std() / v.mean(),
                    "within_15pct": f"{int(within.sum())}/{len(g)}",
                    "right_way": f"{sum(right)}/{len(g)}"})
    return pd.DataFrame(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--out", type=Path, default=Path("/tmp/seed_spread"))
    ap.add_argument("--figures", default=",".join(FIGURES))
    ap.add_argument("--jobs", type=int, default=None)
    args = ap.parse_args()
    figures = [f.strip() for f in args.figures.split(",")]
    per_seed = per_seed_claims(figures, args.seeds, args.out, args.jobs)
    per_seed.to_csv(args.out / "seed_claims.csv", index=False)
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print(spread_table(per_seed).round(3).to_string(index=False))


if __name__ == "__main__":
    main()
