"""The numpy summary equals, bit for bit and key for key, the pandas formulas it replaced
(``summary_reference.py``), on simulated runs of the paper's workloads and on hand-built tables
with NaN (failed apps, background apps still running, calls never returned, empty tables)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from parrotsim.sim.harness.experiment import load_experiment
from parrotsim.sim.harness.outcome import APP_COLUMNS
from parrotsim.sim.harness.simulation import simulate
from parrotsim.sim.model.metrics import CALL_COLUMNS, summarize
from tests.sim.summary_reference import reference_summarize


def _same(a: dict[str, float], b: dict[str, float]) -> None:
    assert list(a) == list(b)
    for key in a:
        x, y = a[key], b[key]
        assert (math.isnan(x) and math.isnan(y)) or x == y, (key, x, y)
        assert type(x) is type(y), key


def _run(experiment: str, pick) -> object:
    runs = load_experiment(experiment).runs
    return simulate(next(r for r in runs if pick(r.labels)).config)


CASES = {
    "chain, Parrot": ("paper/fig11", lambda lb: lb["variant"] == "parrot"),
    "chain with background": ("paper/fig12a", lambda lb: lb["workload.background_rate"] == 3.5),
    "chat and map-reduce": ("paper/fig19", lambda lb: lb["variant"] == "parrot"),
    "GPTs, vLLM": ("paper/fig17", lambda lb: lb["variant"] == "baseline_vllm"
                   and lb["workload.rate"] == 4),
}


@pytest.mark.parametrize("case", list(CASES))
def test_simulated_runs(case):
    result = _run(*CASES[case])
    _same(summarize(result.calls, result.apps, result.engines),
          reference_summarize(result.calls, result.apps, result.engines))


def test_nan_and_mixed_kinds():
    """Calls never returned, failed and unfinished background apps, two kinds, int sends."""
    result = _run("paper/fig19", lambda lb: lb["variant"] == "baseline_latency")
    calls, apps, engines = result.calls.copy(), result.apps.copy(), result.engines.copy()
    rng = np.random.default_rng(0)
    calls.loc[rng.random(len(calls)) < 0.1, "returned"] = -1.0
    gone = rng.random(len(apps)) < 0.2
    apps.loc[gone, "end"] = np.nan
    apps.loc[rng.random(len(apps)) < 0.3, "background"] = True
    apps["latency"] = apps["end"] - apps["arrival"]
    engines.loc[0, "kv_blocks"] = 0  # a 0/0 peak fraction is NaN, skipped by the maximum
    engines.loc[0, "peak_kv_blocks"] = 0
    _same(summarize(calls, apps, engines), reference_summarize(calls, apps, engines))
    calls["sent"] = calls["sent"].round().astype(np.int64)
    _same(summarize(calls, apps, engines), reference_summarize(calls, apps, engines))


def test_empty_tables():
    apps = pd.DataFrame([], columns=APP_COLUMNS)
    apps["latency"] = apps["end"] - apps["arrival"]
    engines = pd.DataFrame([(0, 0.0, 0.0, 0, 0.0, 100, 0, 0.0, 0, 0)], columns=[
        "engine", "busy_time", "utilization", "iterations", "mean_batch", "kv_blocks",
        "peak_kv_blocks", "peak_kv_gb", "extrapolated", "memory_stalls"])
    calls = pd.DataFrame([], columns=CALL_COLUMNS)
    _same(summarize(calls, apps, engines), reference_summarize(calls, apps, engines))
    _same(summarize(calls, apps, engines.iloc[:0]), reference_summarize(calls, apps,
                                                                        engines.iloc[:0]))
