"""From experiment summaries to the report's tidy rows.

A tidy row is ``figure, panel, series, x_name, x, metric, value, unit, oom, runs, oom_runs, lo,
hi, seeds``. ``value`` is the mean of ``metric`` over the ``runs`` runs (documents, seeds) of one
series at one x; ``seeds`` is how many seeds those runs span. ``oom``: a run used Parrot's
engine, which allocates KV blocks without checking (the artifact's runs crashed when they ran
out), and the simulated engine had to hold work back for lack of blocks; ``oom_runs`` of the
``runs`` did. Such points are drawn as crosses and flagged in the headline comparisons. vLLM's
engine preempts when its blocks run out, so its runs are never out of memory. ``lo``/``hi``:
for a ``spread`` panel (Figs 12a, 17, 19: those whose values move with the seed's draw) the 10th
and 90th percentile (``SPREAD_QUANTILES``) of the per-seed values, each the mean over that
seed's runs (Fig 12a's ten documents), drawn as error bars; empty elsewhere.

Fig 17 adds one ``sustainable rate`` row per series (x = the threshold): the request rate at which
its normalized latency crosses ``FIG17_THRESHOLD_MS``, interpolated linearly between the last
swept rate under the threshold and the first over it (metric ``sustainable_rate``). A rate where
the Parrot engine ran out of KV blocks ends the sustained range (the real engine would have
failed there): the row then holds the last rate sustained, with ``oom`` set, as a lower bound
(metric ``sustainable_rate_lower_bound``), as it does for a series that never crosses (the
highest swept rate). A series over the threshold at its lowest rate gives that rate as an upper
bound (``sustainable_rate_upper_bound``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from parrotsim.reports.spec import FIG17_THRESHOLD_MS, SPREAD_QUANTILES, Panel

TIDY_COLUMNS = ["figure", "panel", "series", "x_name", "x", "metric", "value", "unit", "oom",
                "runs", "oom_runs", "lo", "hi", "seeds"]
#: metric names of Fig 17's sustainable-rate rows, by what the value is
RATE_CROSSING = "sustainable_rate"
RATE_LOWER_BOUND = "sustainable_rate_lower_bound"
RATE_UPPER_BOUND = "sustainable_rate_upper_bound"
SUSTAINABLE_PANEL = "sustainable rate"


def _select(summary: pd.DataFrame, where: dict) -> pd.DataFrame:
    rows = summary[summary["status"] == "ok"]
    for col, val in where.items():
        rows = rows[rows[col].astype(str) == str(val)]
    return rows


def panel_rows(panel: Panel, summary: pd.DataFrame, results: Path) -> list[dict]:
    """Tidy rows of one panel from its experiment's summary (``results`` = its store)."""
    if panel.figure == "fig13":
        return _latency_diff(panel, summary, results)
    rows = _select(summary, panel.where).copy()
    if panel.metric == "slot_latency_per_token":
        rows[panel.metric] = rows["mean_slot_latency"] / rows["workload.output_len"]
    x_col = panel.x
    out = []
    for (series, x), group in rows.groupby(["variant", x_col], sort=True):
        oom_runs = int(((group["cluster.engine.policy"] == "parrot")
                        & (group["memory_stalls"] > 0)).sum())
        values = group[panel.metric].astype(float) * panel.scale
        per_seed = values.groupby(group["seed"]).mean()
        lo, hi = (per_seed.quantile(list(SPREAD_QUANTILES)).tolist() if panel.spread
                  else (np.nan, np.nan))
        out.append({"figure": panel.figure, "panel": panel.panel, "series": series,
                    "x_name": panel.x_name, "x": x, "metric": panel.report_metric,
                    "value": float(values.mean()), "unit": panel.unit, "oom": oom_runs > 0,
                    "runs": len(group), "oom_runs": oom_runs, "lo": lo, "hi": hi,
                    "seeds": len(per_seed)})
    if panel.figure == "fig17":
        out += sustainable_rates(panel.figure, out)
    return out


def panel_runs(panel: Panel, summary: pd.DataFrame) -> list[dict]:
    """A ``spread`` panel's per-seed values (``figure, panel, series, x, seed, value, oom``:
    the mean over the seed's runs at that x, and whether one of them used Parrot's engine and
    ran short of KV blocks), from which the claims read the spread of a per-seed ratio;
    nothing for other panels."""
    if not panel.spread:
        return []
    rows = _select(summary, panel.where).copy()
    rows["_value"] = rows[panel.metric].astype(float) * panel.scale
    rows["_oom"] = (rows["cluster.engine.policy"] == "parrot") & (rows["memory_stalls"] > 0)
    keys = ["variant", panel.x, "seed"]
    seeds = rows.groupby(keys, sort=True).agg(value=("_value", "mean"), oom=("_oom", "any"))
    return [{"figure": panel.figure, "panel": panel.panel, "series": variant, "x": x,
             "seed": seed, "value": float(r.value), "oom": bool(r.oom)}
            for (variant, x, seed), r in seeds.iterrows()]


def _latency_diff(panel: Panel, summary: pd.DataFrame, results: Path) -> list[dict]:
    rows = _select(summary, panel.where)
    apps = {}
    for series in ("parrot", "baseline_vllm"):
        key = rows[rows["variant"] == series]["run_hash"].iloc[0]
        table = pd.read_parquet(results / "runs" / key / "apps.parquet")
        apps[series] = table.set_index("app_id")["latency"]
    diff = (apps["baseline_vllm"] - apps["parrot"]).dropna()
    order = sorted(diff.index, key=lambda a: int(a.rsplit("-", 1)[-1]))
    return [{"figure": "fig13", "panel": "", "series": "baseline_vllm - parrot",
             "x_name": panel.x_name, "x": i, "metric": panel.report_metric,
             "value": float(diff[a]), "unit": panel.unit, "oom": False, "runs": 1,
             "oom_runs": 0, "lo": np.nan, "hi": np.nan, "seeds": 1}
            for i, a in enumerate(order)]


def crossing_rate(points: list[tuple[float, float, bool]],
                  threshold: float = FIG17_THRESHOLD_MS) -> tuple[float, str, bool]:
    """The rate at which latency crosses ``threshold``, from ``(rate, latency, oom)`` points.

    Returns ``(rate, metric, oom)``: the crossing interpolated linearly between the last rate
    under the threshold and the first over it (``RATE_CROSSING``); the last rate sustained when
    an out-of-memory point ends the range first (``RATE_LOWER_BOUND``, ``oom`` True) or when the
    series never crosses (``RATE_LOWER_BOUND``, the highest rate); the lowest rate when it is
    already over the threshold there (``RATE_UPPER_BOUND``; NaN when that point is out of
    memory too).
    """
    last = None
    for rate, latency, oom in sorted(points):
        if oom:
            return (last[0], RATE_LOWER_BOUND, True) if last else (np.nan, RATE_UPPER_BOUND, True)
        if latency > threshold:
            if last is None:
                return rate, RATE_UPPER_BOUND, False
            r0, v0 = last
            return r0 + (threshold - v0) * (rate - r0) / (latency - v0), RATE_CROSSING, False
        last = (rate, latency)
    return (last[0], RATE_LOWER_BOUND, False) if last else (np.nan, RATE_LOWER_BOUND, False)


def sustainable_rates(figure: str, rows: list[dict]) -> list[dict]:
    """Per series, one ``sustainable rate`` row from its latency-vs-rate ``rows``."""
    out = []
    for series in sorted({r["series"] for r in rows}):
        points = [(float(r["x"]), float(r["value"]), bool(r["oom"])) for r in rows
                  if r["series"] == series]
        rate, metric, oom = crossing_rate(points)
        out.append({"figure": figure, "panel": SUSTAINABLE_PANEL, "series": series,
                    "x_name": "threshold (ms/token)", "x": FIG17_THRESHOLD_MS,
                    "metric": metric, "value": rate, "unit": "req/s", "oom": oom,
                    "runs": np.nan, "oom_runs": np.nan, "lo": np.nan, "hi": np.nan,
                    "seeds": np.nan})
    return out
