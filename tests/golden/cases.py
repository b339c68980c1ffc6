"""The golden cases: sub-sweeps of shipped experiments whose summaries are pinned byte for byte.

Each case names a shipped experiment and, per label, the values kept (a run is kept when every
listed label has one of its values). Together they cover the vLLM and HF engines, the Parrot
engine (fifo, fifo_v2, tgi) and cluster scheduler (plain, app FIFO, DAG-aware, prefix-aware),
FastChat's shortest queue and the Bing slots driver, prefix sharing with the paged and the
shared-prefix kernels, preemption (vLLM by recompute, Parrot engines short of blocks), one and
four engines. The whole set simulates in a few seconds.

A golden table (``tests/golden/<case>.csv``) has one row per kept run, in expansion order: the
labels (lists as JSON), then every metric of ``RunResult.summary`` as Python's ``repr`` of the
float (the shortest text that reads back to the same double; ``nan`` for NaN).
"""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path
from typing import Any

from parrotsim.api import load_experiment, simulate

HERE = Path(__file__).resolve().parent

#: case -> (shipped experiment, {label: allowed values})
CASES: dict[str, tuple[str, dict[str, list[Any]]]] = {
    # LangChain + vLLM / HF vs the Parrot client, engine and scheduler with a cached prefix
    "fig11_doc0": ("paper/fig11", {"workload.docs": [[0]]}),
    # app FIFO in the manager and fifo_v2 in the engine; vLLM preempting
    "fig12b": ("paper/fig12b", {}),
    # slots driver, shared-prefix vs paged kernel, Parrot engine short of blocks
    "fig15": ("paper/fig15", {}),
    # four engines: prefix-affinity placement with a prefix TTL, shortest queue + vLLM
    "fig17_rates_1_4": ("paper/fig17", {"workload.rate": [1, 4], "seed": [0]}),
    # MetaGPT rounds: DAG-aware manager, forked round prefixes, vLLM preempting
    "fig18": ("paper/fig18", {}),
    # chat + map-reduce: tgi engine scheduler, per-call hints, four engines
    "fig19_seed0": ("paper/fig19", {"seed": [0]}),
}


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return "nan" if math.isnan(value) else repr(value)
    if isinstance(value, (list, dict, tuple)):
        return json.dumps(value, sort_keys=True)
    return str(value)


def golden_table(case: str) -> str:
    """Simulate the case's runs (in this process) and return its table as CSV text."""
    name, keep = CASES[case]
    exp = load_experiment(name)
    rows: list[dict[str, str]] = []
    for run in exp.runs:
        if any(run.labels[label] not in values for label, values in keep.items()):
            continue
        metrics = simulate(run.config).summary
        row = {label: _cell(v) for label, v in run.labels.items()}
        row.update({m: _cell(float(v)) for m, v in metrics.items()})
        rows.append(row)
    if not rows:
        raise ValueError(f"golden case {case!r} keeps no run of {name}")
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(rows[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue()


def golden_path(case: str) -> Path:
    return HERE / f"{case}.csv"
