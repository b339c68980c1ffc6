"""The report against ground truth: the ParrotServe artifact's own printed runs, never fitted.

The ParrotServe repository keeps what its scripts printed when the artifact re-ran Figs 14a-19
(one A100-80GB for Figs 14-18, four RTX A6000 for Figs 17 and 19; copied into
``calibrate/measurements/artifact_runs``, whose README gives each file's source). No profile is
fitted to them, so they check the report's simulated runs from outside: each printed value is set
against the mean of the simulated runs of the same system and setting (all seeds, all documents),
with the signed error ``simulated / real - 1``.

What is compared (the experiment's summary metric, seconds or ms per token):

* Fig 14a: map-reduce JCT at chunk 1024 per output length, the mean of the 10 documents;
* Fig 15: Bing mean request latency per batch; Fig 16: the same with fixed outputs;
* Fig 17: GPTs mean normalized latency per request rate;
* Fig 18: MetaGPT time for 10 rounds per number of files;
* Fig 19: chat normalized latency, chat decode time and map-reduce JCT, the mean of the
  artifact's 5 re-runs (campaign ``artifact``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

#: where the printed runs live in a checkout and in the wheel (package data)
DATA_DIR = Path(__file__).resolve().parents[1] / "calibrate" / "measurements" / "artifact_runs"
COLUMNS = ["figure", "gpu", "series", "setting", "metric", "unit", "real", "simulated",
           "error_pct", "sim_runs", "source"]
A100 = "A100-80GB"
A6000 = "4x RTX A6000"


@dataclass(frozen=True)
class Source:
    """One printed table: ``series`` column (the experiment's variant names), ``axes`` (printed
    column -> the run label it equals), ``values`` (printed column -> (summary metric, unit)),
    rows kept where ``where`` holds, simulated runs kept where ``sim_where`` holds."""

    figure: str
    experiment: str
    file: str
    gpu: str
    series: str
    axes: dict[str, str]
    values: dict[str, tuple[str, str]]
    where: dict[str, object] = field(default_factory=dict)
    sim_where: dict[str, object] = field(default_factory=dict)


SOURCES = [
    Source("fig14", "fig14", "fig14_output_len.csv", A100, "system",
           {"output_len": "workload.output_len"}, {"jct_s": ("mean_jct", "s")},
           sim_where={"workload.chunk_size": 1024}),
    Source("fig15", "fig15", "fig15_latency.csv", A100, "system",
           {"batch": "cluster.scheduler.slots"}, {"mean_latency_s": ("mean_slot_latency", "s")}),
    Source("fig16", "fig16", "fig16_runs.csv", A100, "system",
           {"batch": "cluster.scheduler.slots", "output_len": "workload.output_len"},
           {"mean_latency_s": ("mean_slot_latency", "s")}),
    Source("fig17", "fig17", "fig17_normalized_latency.csv", A6000, "series",
           {"rate": "workload.rate"}, {"normalized_latency_ms": ("normalized_latency", "ms")}),
    Source("fig18", "fig18", "fig18_jct.csv", A100, "system",
           {"files": "workload.files"}, {"jct_s": ("mean_jct", "s")}),
    Source("fig19", "fig19", "fig19_runs.csv", A6000, "system", {},
           {"chat_normalized_latency_ms": ("chat_normalized_latency", "ms"),
            "chat_decode_time_ms": ("chat_decode_time", "ms"),
            "mr_jct_s": ("mean_jct_map_reduce", "s")},
           where={"campaign": "artifact"}),
]


def _matches(frame: pd.DataFrame, conditions: dict[str, object]) -> pd.Series:
    keep = pd.Series(True, index=frame.index)
    for column, value in conditions.items():
        if column not in frame:
            return pd.Series(False, index=frame.index)
        keep &= pd.to_numeric(frame[column], errors="coerce").eq(value) | frame[column].eq(value)
    return keep


def compare_source(src: Source, printed: pd.DataFrame, summary: pd.DataFrame) -> list[dict]:
    """The rows of one printed table against one experiment's summary (one row per run, as in
    ``results/<experiment>/summary.csv``): printed values averaged over the table's repeated
    rows (documents, runs), simulated ones over the matching ok runs; a point with no
    simulated run is left out."""
    printed = printed[_matches(printed, src.where)]
    runs = summary[_matches(summary, src.sim_where)]
    if "status" in runs:
        runs = runs[runs["status"] == "ok"]
    keys = [src.series, *src.axes]
    rows = []
    for key, group in printed.groupby(keys, sort=True):
        key = key if isinstance(key, tuple) else (key,)
        mine = runs[runs["variant"] == key[0]]
        for column, value in zip(src.axes, key[1:], strict=True):
            mine = mine[_matches(mine, {src.axes[column]: value})]
        if mine.empty:
            continue
        setting = ", ".join(f"{c} {v:g}" for c, v in zip(src.axes, key[1:], strict=True))
        for column, (metric, unit) in src.values.items():
            real = float(group[column].mean())
            sim = float(mine[metric].mean())
            rows.append({"figure": src.figure, "gpu": src.gpu, "series": key[0],
                         "setting": setting or "-", "metric": metric, "unit": unit,
                         "real": real, "simulated": sim,
                         "error_pct": 100 * (sim / real - 1), "sim_runs": len(mine),
                         "source": f"calibrate/measurements/artifact_runs/{src.file}"})
    return rows


def compare(summaries: dict[str, pd.DataFrame], data_dir: Path = DATA_DIR) -> pd.DataFrame:
    """Every printed point of the experiments in ``summaries`` (experiment name -> summary),
    as :data:`COLUMNS`; empty when ``data_dir`` holds no printed tables."""
    rows = []
    for src in SOURCES:
        path = data_dir / src.file
        if src.experiment in summaries and path.is_file():
            rows += compare_source(src, pd.read_csv(path), summaries[src.experiment])
    return pd.DataFrame(rows, columns=COLUMNS)


def summary(table: pd.DataFrame) -> dict:
    """Points, median |error| (%), points within 10 % and 25 %, and the worst signed error (%)
    of a :func:`compare` table (or any part of it)."""
    err = table["error_pct"]
    worst = err.iloc[int(np.argmax(err.abs().to_numpy()))] if len(err) else np.nan
    return {"points": len(table), "median_abs_error_pct": float(err.abs().median()),
            "within_10pct": int((err.abs() <= 10).sum()),
            "within_25pct": int((err.abs() <= 25).sum()), "worst_pct": float(worst)}


def summary_line(table: pd.DataFrame, digits: int = 1) -> str:
    """``"76 points, median |error| 8.2 %, 46 within 10 %"``."""
    s = summary(table)
    return (f"{s['points']} points, median |error| {s['median_abs_error_pct']:.{digits}f} %, "
            f"{s['within_10pct']} within 10 %")


def by_figure(table: pd.DataFrame) -> pd.DataFrame:
    """Per figure: points, median |error| (%), points within 10 %, the worst signed error."""
    columns = ["figure", "gpu", "points", "median_abs_error_pct", "within_10pct", "worst_pct"]
    rows = [{"figure": figure, "gpu": gpu, **summary(group)}
            for (figure, gpu), group in table.groupby(["figure", "gpu"], sort=True)]
    return pd.DataFrame(rows, columns=columns)
