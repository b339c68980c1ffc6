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

from typing import Any

import pandas as pd

from parrotsim.sim.model.engine import Engine
from parrotsim.sim.model.metrics import RunResult, call_table, engine_table, summarize
from parrotsim.sim.model.request import CallInfo
from parrotsim.workloads.app import App

APP_COLUMNS = ["app_id", "kind", "background", "arrival", "end", "calls"]


class StalledRun(RuntimeError):
    """No event is left but some foreground app has not finished: something waits for what
    never happens (an engine policy that never runs a call it holds)."""

    def __init__(self, now: float, left: int, total: int, engines: list[Engine]) -> None:
        held = ", ".join(f"engine {e.engine_id}: {len(e.state.waiting)} waiting, "
                         f"{len(e.state.running)} running" for e in engines)
        super().__init__(f"the run stalled at t = {now:.6g} s: {left} of {total} apps never "
                         f"finished and no event is left ({held})")


def run_result(apps: list[App], finished: list[Any], requests: list[CallInfo],
               engines: list[Engine], bytes_per_block: float, end: float) -> RunResult:
    """The tables and summary of a run that ended at ``end``: ``finished`` are the apps' client
    records (``end``, ``failed``) in the order they completed or failed, ``requests`` every
    call sent, ``bytes_per_block`` the size of one KV block."""
    ends = {r.app.app_id: r.end for r in finished if not r.failed}
    app_rows = [{
        "app_id": a.app_id, "kind": a.kind, "background": a.background, "arrival": a.arrival,
        "end": ends.get(a.app_id, float("nan")), "calls": len(a.calls),
    } for a in apps]
    app_df = pd.DataFrame(app_rows, columns=APP_COLUMNS)
    app_df["latency"] = app_df["end"] - app_df["arrival"]
    calls = call_table(requests)
    engine_df = engine_table(engines, bytes_per_block, end)
    return RunResult(calls, app_df, engine_df, summarize(calls, app_df, engine_df))
