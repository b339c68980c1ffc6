"""The summary of an experiment's runs: ``summary.csv``, ``summary.parquet``, ``experiment.json``.

``OUT/summary.csv`` and ``OUT/summary.parquet`` hold one row per expanded run (in expansion
order): ``run_hash``, ``status`` (``ok`` or ``failed``), the labels (``variant``, one column per
sweep axis named by its dotted path, ``seed``), the metrics of ``RunResult.summary``, ``error``
(a failed run's whole exception message, its lines joined by `` | ``; the traceback is in
``runs/<hash>/error.txt``) and every field of the run's config as a dotted column
(``cluster.engines``, ``workload.rate``, ...). Labels and config values that are lists or
mappings are JSON text. ``OUT/experiment.json`` names the experiment and its label and metric
columns (``parrotsim show`` reads it).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
from filelock import FileLock

from parrotsim import __version__
from parrotsim.sim.harness.experiment import ExpandedRun, Experiment
from parrotsim.sim.harness.store import LOCKS, write_all_atomic

SUMMARY_CSV = "summary.csv"
SUMMARY_PARQUET = "summary.parquet"
META = "experiment.json"


def summary_frame(runs: list[ExpandedRun], records: dict[str, dict[str, Any]]) -> pd.DataFrame:
    """One row per run with a record (see module docstring for the columns)."""
    rows, metric_names = [], []
    for run in runs:
        for name in records.get(run.key, {}).get("metrics", {}):
            if name not in metric_names:
                metric_names.append(name)
    for run in runs:
        record = records.get(run.key)
        if record is None:
            continue
        row: dict[str, Any] = {"run_hash": run.key, "status": record["status"]}
        row.update({k: _cell(v) for k, v in run.labels.items()})
        row.update({m: record["metrics"].get(m, float("nan")) for m in metric_names})
        row["error"] = _one_line(record.get("error", ""))
        for k, v in flatten(run.config.model_dump(mode="json")).items():
            row.setdefault(k, _cell(v))
        rows.append(row)
    return pd.DataFrame(rows)


def flatten(data: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested mappings as one level of dotted keys."""
    out: dict[str, Any] = {}
    for k, v in data.items():
        if isinstance(v, dict) and v:
            out.update(flatten(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def _cell(v: Any) -> Any:
    return json.dumps(v, sort_keys=True) if isinstance(v, (list, dict, tuple)) else v


def _one_line(text: str) -> str:
    return " | ".join(ln.strip() for ln in text.strip().splitlines() if ln.strip())


def write_summary(out: Path, exp: Experiment, frame: pd.DataFrame) -> None:
    """Write ``summary.csv``, ``summary.parquet`` and ``experiment.json``: all three into
    temporary files first, then each renamed over the old one (``os.replace``), under a lock
    of the folder so that two sweeps finishing at once do not interleave their files; a
    write that fails (a full disk) leaves the previous summary as it was."""
    cols = list(frame.columns)
    head = cols[:cols.index("error")] if "error" in cols else []
    metrics = [c for c in head if c not in ("run_hash", "status", *exp.label_names)]
    meta = {"name": exp.name, "description": exp.spec.description, "source": exp.source,
            "labels": exp.label_names, "axes": list(exp.spec.sweep), "version": __version__,
            "runs": len(frame), "metrics": metrics}
    (out / LOCKS).mkdir(parents=True, exist_ok=True)
    with FileLock(out / LOCKS / "summary.lock"):
        write_all_atomic({out / SUMMARY_CSV: frame.to_csv(index=False),
                          out / SUMMARY_PARQUET: _parquet_safe(frame).to_parquet(index=False),
                          out / META: json.dumps(meta, indent=1)})


def _parquet_safe(frame: pd.DataFrame) -> pd.DataFrame:
    """Object columns mixing types (a label that is a number in one run, text in another)
    become JSON text, which Parquet can store."""
    frame = frame.copy()
    for col in frame.columns:
        if frame[col].dtype == object:
            kinds = {type(v) for v in frame[col] if v is not None and v == v}
            if len(kinds) > 1 or (kinds and not kinds <= {str}):
                frame[col] = [None if v is None else json.dumps(v) for v in frame[col]]
    return frame
