"""How a simulation ends: the result tables of a run that ended, the error of one that stalled.

A run ends when every foreground app has completed or failed (an app fails when one of its
calls is rejected: no engine of the cluster can ever run it, see
:mod:`parrotsim.sim.model.admission`). :func:`run_result` assembles its per-call, per-app and
per-engine tables and summary (:mod:`parrotsim.sim.model.metrics`): a failed app's ``end`` and
``latency`` are NaN, like those of a background app still running when the run ended. A run
whose events run out before that raises :class:`StalledRun` instead of returning numbers.
Times in simulated seconds.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from parrotsim.sim.model.call_log import CallLog
from parrotsim.sim.model.engine import Engine
from parrotsim.sim.model.metrics import RunResult, engine_table, summarize
from parrotsim.workloads.app import App
from parrotsim.workloads.app_stream import AppsThenStream, SingleCallApps

APP_COLUMNS = ["app_id", "kind", "background", "arrival", "end", "calls"]


class StalledRun(RuntimeError):
    """No event is left but some foreground app has not finished: something waits for what
    never happens (an engine policy that never runs a call it holds)."""

    def __init__(self, now: float, left: int, total: int, engines: list[Engine]) -> None:
        held = ", ".join(f"engine {e.engine_id}: {len(e.state.waiting)} waiting, "
                         f"{len(e.state.running)} running" for e in engines
                         if e.state.waiting or e.state.running) or "no engine holds a call"
        super().__init__(f"the run stalled at t = {now:.6g} s: {left} of {total} apps never "
                         f"finished and no event is left ({held})")


def run_result(apps: Sequence[App], ends: np.ndarray, log: CallLog, engines: list[Engine],
               bytes_per_block: float, end: float) -> RunResult:
    """The tables and summary of a run that ended at ``end``: ``ends[i]`` is when app ``i``
    completed at its client (NaN: it failed, or had not completed), ``log`` holds every call
    sent, ``bytes_per_block`` is the size of one KV block."""
    if isinstance(apps, SingleCallApps):  # the apps table from the stream's arrays
        app_df = _stream_table(apps, ends)
    elif isinstance(apps, AppsThenStream):
        k = len(apps.front)
        app_df = pd.concat([_list_table(apps.front, ends[:k]),
                            _stream_table(apps.stream, ends[k:])], ignore_index=True)
    else:
        app_df = _list_table(apps, ends)
    app_df["latency"] = app_df["end"] - app_df["arrival"]
    calls = log.table()
    engine_df = engine_table(engines, bytes_per_block, end)
    return RunResult(calls, app_df, engine_df, summarize(calls, app_df, engine_df))


def _list_table(apps: Sequence[App], ends: np.ndarray) -> pd.DataFrame:
    return pd.DataFrame([{
        "app_id": a.app_id, "kind": a.kind, "background": a.background,
        "arrival": a.arrival, "end": e, "calls": len(a.calls),
    } for a, e in zip(apps, ends.tolist(), strict=True)], columns=APP_COLUMNS)


def _stream_table(apps: SingleCallApps, ends: np.ndarray) -> pd.DataFrame:
    """The apps table of a stream, from its arrays (no app is made)."""
    n = len(apps)
    return pd.DataFrame({
        "app_id": apps.ids(), "kind": [apps.kind] * n, "background": np.full(n, apps.background),
        "arrival": apps.arrivals, "end": ends, "calls": np.ones(n, np.int64),
    }, columns=APP_COLUMNS)
