"""From experiment summaries to the report's tidy rows.

A tidy row is ``figure, panel, series, x_name, x, metric, value, unit`` plus ``oom``: the run
used Parrot's engine, which allocates KV blocks without checking (the artifact's runs crashed
when they ran out), and the simulated engine had to hold work back for lack of blocks. Such
points are drawn as crosses and left out of the headline comparisons. vLLM's engine preempts
when its blocks run out, so its runs are never out of memory.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from parrotsim.reports.spec import FIG17_THRESHOLD_MS, Panel

TIDY_COLUMNS = ["figure", "panel", "series", "x_name", "x", "metric", "value", "unit", "oom"]


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
    if panel.metric == "engine_latency_per_token":
        rows[panel.metric] = rows["mean_engine_latency"] / rows["workload.output_len"]
    x_col = panel.x
    out = []
    for (series, x), group in rows.groupby(["variant", x_col], sort=True):
        oom = bool(((group["cluster.engine.policy"] == "parrot")
                    & (group["memory_stalls"] > 0)).any())
        value = float(group[panel.metric].mean()) * panel.scale
        out.append({"figure": panel.figure, "panel": panel.panel, "series": series,
                    "x_name": panel.x_name, "x": x, "metric": panel.report_metric,
                    "value": value, "unit": panel.unit, "oom": oom})
    if panel.figure == "fig17":
        out += _sustainable_rates(panel, out)
    return out


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
             "value": float(diff[a]), "unit": panel.unit, "oom": False}
            for i, a in enumerate(order)]


def _sustainable_rates(panel: Panel, rows: list[dict]) -> list[dict]:
    """Per series, the highest swept rate whose normalized latency stays under the threshold."""
    out = []
    for series in sorted({r["series"] for r in rows}):
        ok = [float(r["x"]) for r in rows
              if r["series"] == series and r["value"] <= FIG17_THRESHOLD_MS and not r["oom"]]
        out.append({"figure": panel.figure, "panel": "sustainable rate", "series": series,
                    "x_name": "threshold (ms/token)", "x": FIG17_THRESHOLD_MS,
                    "metric": "sustainable_rate", "value": max(ok) if ok else np.nan,
                    "unit": "req/s", "oom": False})
    return out
