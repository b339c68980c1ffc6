"""parrotsim's Python API, for studies scripted in a notebook or a program.

Five names cover the common uses::

    from parrotsim.api import load_experiment, run_config, simulate

    exp = load_experiment("paper/fig14")              # a shipped name or a YAML path
    result = simulate(exp.runs[0].config)             # one run, in this process
    result.calls, result.apps, result.engines         # pandas DataFrames
    result.summary["mean_jct"]                        # the headline metrics (seconds)

:func:`run_config` builds a run in code from the same fields an experiment file's ``run:``
section takes; :func:`run_experiment` runs a whole sweep into a results folder (cached, in
parallel) and returns its summary table; :func:`read_run` reads one stored run back.
Units are those of :mod:`parrotsim.sim.model.metrics`: seconds, ms per token, GB.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from parrotsim.sim.harness.config import RunConfig
from parrotsim.sim.harness.experiment import ExpandedRun, Experiment, load_experiment
from parrotsim.sim.harness.runner import run_experiment
from parrotsim.sim.harness.shipped import shipped_experiments
from parrotsim.sim.harness.simulation import simulate
from parrotsim.sim.harness.store import MARKER, TABLES
from parrotsim.sim.model.metrics import RunResult

__all__ = [
    "ExpandedRun", "Experiment", "RunConfig", "RunResult", "load_experiment", "read_run",
    "run_config", "run_experiment", "shipped_experiments", "simulate",
]


def run_config(**fields: Any) -> RunConfig:
    """A validated run config from keyword fields, e.g. ``run_config(workload={"kind":
    "sharegpt", "num_requests": 100, "rate": 2}, cluster={"engines": 2}, seed=1)``; raises
    ``pydantic.ValidationError`` naming the bad field."""
    return RunConfig.model_validate(fields)


def read_run(run_dir: str | Path) -> RunResult:
    """The tables and summary of one stored run (``OUT/runs/<key>/``)."""
    run_dir = Path(run_dir)
    record = json.loads((run_dir / MARKER).read_text())
    if record.get("status") != "ok":
        raise ValueError(f"{run_dir}: the run failed: {record.get('error', '')}")
    tables = [pd.read_parquet(run_dir / f"{name}.parquet") for name in TABLES]
    summary = {k: float("nan") if v is None else v for k, v in record["metrics"].items()}
    return RunResult(*tables, summary)
