"""Degenerate runs (no call finished, zero length, one call, no app at all) give defined
metrics and no warning (issue 15): every test runs with warnings turned into errors."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from parrotsim.sim.harness.config import RunConfig
from parrotsim.sim.harness.outcome import APP_COLUMNS
from parrotsim.sim.harness.simulation import simulate
from parrotsim.sim.model.metrics import CALL_COLUMNS, summarize
from parrotsim.workloads.app import Text, single_call_app

pytestmark = pytest.mark.filterwarnings("error")
NAN_WHEN_EMPTY = ["mean_jct", "p50_jct", "p90_jct", "p99_jct", "mean_request_latency",
                  "normalized_latency", "latency_per_output_token", "mean_engine_latency",
                  "mean_slot_latency", "mean_ttft"]


def _apps(rows: list[tuple]) -> pd.DataFrame:
    frame = pd.DataFrame(rows, columns=APP_COLUMNS)
    frame["latency"] = frame["end"] - frame["arrival"]
    return frame


ENGINE_COLUMNS = ["engine", "busy_time", "utilization", "iterations", "mean_batch", "kv_blocks",
                  "peak_kv_blocks", "peak_kv_gb", "extrapolated", "memory_stalls"]


def _engines(n: int = 1) -> pd.DataFrame:
    return pd.DataFrame([(i, 0.0, 0.0, 0, 0.0, 100, 0, 0.0, 0, 0) for i in range(n)],
                        columns=ENGINE_COLUMNS)


def _call(sent: float, returned: float, first: float, finished: float, output: int) -> tuple:
    return ("a", "chat", "c", 0, sent, sent, sent, sent, sent, first, first, finished,
            returned, 10, 0, output, 0)


def test_no_app_and_no_call():
    s = summarize(pd.DataFrame([], columns=CALL_COLUMNS), _apps([]), _engines(0))
    assert s["apps"] == 0 and s["calls"] == 0 and s["throughput"] == 0.0
    assert s["peak_kv_memory"] == 0.0 and s["preemptions"] == 0.0
    assert all(math.isnan(s[m]) for m in NAN_WHEN_EMPTY)


def test_no_call_finished():
    calls = pd.DataFrame([_call(0.0, -1.0, -1.0, -1.0, 5)], columns=CALL_COLUMNS)
    s = summarize(calls, _apps([("a", "chat", False, 0.0, math.nan, 1)]), _engines())
    assert s["apps"] == 1 and s["calls"] == 0 and s["throughput"] == 0.0
    assert math.isnan(s["makespan"]) and math.isnan(s["mean_jct_chat"])
    assert all(math.isnan(s[m]) for m in NAN_WHEN_EMPTY)


def test_zero_length_run():
    calls = pd.DataFrame([_call(0.0, 0.0, 0.0, 0.0, 1)], columns=CALL_COLUMNS)
    s = summarize(calls, _apps([("a", "chat", False, 0.0, 0.0, 1)]), _engines())
    assert s["makespan"] == 0.0 and s["throughput"] == 0.0 and s["mean_jct"] == 0.0
    assert math.isnan(s["latency_per_output_token"])  # no call of two or more tokens


def test_one_call():
    calls = pd.DataFrame([_call(0.0, 0.6, 0.2, 0.5, 5)], columns=CALL_COLUMNS)
    s = summarize(calls, _apps([("a", "chat", False, 0.0, 0.6, 1)]), _engines())
    assert s["mean_jct"] == s["p99_jct"] == 0.6
    assert s["latency_per_output_token"] == pytest.approx(75.0)  # (0.5 - 0.2) / 4 s in ms
    assert s["throughput"] == pytest.approx(5 / 0.6)


def test_simulated_one_call_run():
    result = simulate(RunConfig.model_validate(
        {"workload": {"kind": "sharegpt", "num_requests": 1, "rate": 1.0}}))
    assert result.summary["calls"] == 1 and math.isfinite(result.summary["mean_jct"])


def test_simulated_run_whose_only_call_is_rejected():
    cfg = RunConfig.model_validate({"workload": {"kind": "sharegpt", "num_requests": 1}})
    app = single_call_app("big", 0.0, (Text("huge", 10_000_000),), 5)
    result = simulate(cfg, apps=[app])
    assert len(result.rejected) == 1 and result.summary["calls"] == 0
    assert all(math.isnan(result.summary[m]) for m in NAN_WHEN_EMPTY)
