"""The headline claims as the artifact's own re-run measured them.

The ParrotServe artifact re-ran Figs 14a-19 and printed the results
(:mod:`parrotsim.reports.ground_truth`). Where those printed runs hold both systems of a claim,
the claim's ratio is computed from them exactly as from the simulated runs: ``slower / faster``
at the claim's x (Fig 19: the two systems' means over the re-run's 5 runs), and for Fig 17 the
ratio of the rates at which each printed curve crosses the report's latency threshold
(:func:`parrotsim.reports.derive.crossing_rate`, linear between the printed rates; a curve
that never crosses gives no ratio). Claims with no printed runs (Figs 11-13, 14b, Fig 17's
Parrot w/o Scheduling, which the artifact never ran) get none. Beside the paper's value this
says how much of a gap between the paper and the simulator the paper's own hardware showed.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from parrotsim.reports.claim_list import CLAIMS, Claim
from parrotsim.reports.derive import RATE_CROSSING, SUSTAINABLE_PANEL, crossing_rate
from parrotsim.reports.spec import PANELS

#: claim figure -> (printed-runs figure, metric, setting of the claim's x)
WHERE = {
    "fig14a": ("fig14", "mean_jct", "output_len {x}"),
    "fig15": ("fig15", "mean_slot_latency", "batch {x}"),
    "fig16a": ("fig16", "mean_slot_latency", "batch 32, output_len {x}"),
    "fig16b": ("fig16", "mean_slot_latency", "batch 64, output_len {x}"),
    "fig18a": ("fig18", "mean_jct", "files {x}"),
}
#: Fig 19 panel -> its metric (the printed runs use the simulator's metric names)
FIG19_METRICS = {p.panel: p.metric for p in PANELS if p.figure == "fig19"}


def _value(truth: pd.DataFrame, figure: str, series: str, metric: str, setting: str) -> float:
    rows = truth[(truth["figure"] == figure) & (truth["series"] == series)
                 & (truth["metric"] == metric) & (truth["setting"] == setting)]
    return float(rows["real"].iloc[0]) if len(rows) else np.nan


def _rate(truth: pd.DataFrame, series: str) -> float:
    """Where ``series``' printed Fig 17 curve crosses the threshold; NaN if it never does."""
    rows = truth[(truth["figure"] == "fig17") & (truth["series"] == series)]
    points = [(float(s.split()[-1]), float(v), False)
              for s, v in zip(rows["setting"], rows["real"], strict=True)]
    rate, metric, _ = crossing_rate(points) if points else (np.nan, "", False)
    return rate if metric == RATE_CROSSING else np.nan


def rerun_ratio(truth: pd.DataFrame, claim: Claim) -> float:
    """``claim``'s ratio in the printed runs ``truth`` (:func:`ground_truth.compare`'s table);
    NaN where they do not hold it."""
    if claim.panel == SUSTAINABLE_PANEL:
        return _rate(truth, claim.slower) / _rate(truth, claim.faster)
    if claim.figure == "fig19":
        metric = FIG19_METRICS[claim.panel]
        return (_value(truth, "fig19", claim.slower, metric, "-")
                / _value(truth, "fig19", claim.faster, metric, "-"))
    if claim.figure not in WHERE or claim.x is None:
        return np.nan
    figure, metric, setting = WHERE[claim.figure]
    setting = setting.format(x=f"{float(claim.x):g}")
    return (_value(truth, figure, claim.slower, metric, setting)
            / _value(truth, figure, claim.faster, metric, setting))


def rerun_claims(truth: pd.DataFrame | None) -> dict[str, float]:
    """Claim id -> its ratio in the artifact's printed runs (NaN where they do not hold it)."""
    if truth is None or truth.empty:
        return {}
    return {c.id: round(rerun_ratio(truth, c), 3) for c in CLAIMS}
