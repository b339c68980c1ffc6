"""A run's timeline as Chrome/Perfetto trace events (JSON; opens in ui.perfetto.dev).

Process ``engines``: a track per engine, an event per iteration or fast-forwarded decode stretch
(as far as it ran). Process ``apps``: a track per app (a lane per concurrent call), an event per
call over its phases ``network-send`` (sent -> arrived at the manager), ``waiting for inputs``
(producers unfinished; the post's network leg lies under the wait when they held back its
arrival), ``queued`` (-> admitted), ``prefill`` (-> first token), ``decode`` (-> finished),
``return network`` (-> returned). Simulated seconds in; ``ts``/``dur`` in microseconds out,
rounded to whole nanoseconds so that adjacent events meet exactly.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, NamedTuple

import pandas as pd

from parrotsim.sim.model.sequence import Batch

ENGINES_PID, APPS_PID = 1, 2
Event = dict[str, Any]
Deps = Mapping[tuple[str, str], tuple[str, ...]]  # (app_id, call) -> calls it depends on


class Iteration(NamedTuple):
    """One engine iteration or decode stretch (times in simulated seconds)."""

    engine: int
    start: float
    end: float
    kind: str  # prefill (prompt chunks only) | mixed (chunks and decodes) | decode-stretch
    prefill_seqs: int
    prefill_tokens: int
    decode_seqs: int
    decode_steps: int  # decode iterations it stands for (0: no decodes)
    kernel: str  # the engine's decode attention kernel: paged | shared_prefix | parrot_2023
    shared_groups: int  # groups of forks costed as sharing their prefix (0: not costed so)


class IterationRecorder:
    """Passed to ``simulate(recorder=...)``: keeps an :class:`Iteration` per engine event."""

    def __init__(self) -> None:
        self.iterations: list[Iteration] = []

    def __call__(self, engine: Any, start: float, end: float, batch: Batch, steps: int) -> None:
        prefills, decodes = batch.prefills, batch.decodes
        kind = ("mixed" if decodes else "prefill") if prefills else "decode-stretch"
        groups = len(engine._shared_groups(batch)[0]) if engine.shared_kernel else 0
        self.iterations.append(Iteration(
            engine.engine_id, start, end, kind, len(prefills), sum(n for _, n in prefills),
            len(decodes), steps if decodes else 0,
            engine.kernel, groups))


def _ns(t: float) -> int:
    return round(t * 1e9)


def _complete(name: str, cat: str, pid: int, tid: int, t0: int, t1: int, args: dict) -> Event:
    return {"name": name, "cat": cat, "ph": "X", "pid": pid, "tid": tid, "ts": t0 / 1e3,
            "dur": (t1 - t0) / 1e3, "args": args}


def _meta(pid: int, tid: int, what: str, value: str | int) -> Event:
    key = "name" if what.endswith("_name") else "sort_index"
    return {"name": what, "ph": "M", "pid": pid, "tid": tid, "ts": 0, "args": {key: value}}


def _named(pid: int, tid: int, kind: str, name: str, index: int) -> list[Event]:
    return [_meta(pid, tid, f"{kind}_name", name), _meta(pid, tid, f"{kind}_sort_index", index)]


def engine_events(iterations: list[Iteration], engines: int) -> list[Event]:
    """The ``engines`` process: engine ``e`` on track (tid) ``e + 1``."""
    events = _named(ENGINES_PID, 0, "process", "engines", 0)
    for e in range(engines):
        events += _named(ENGINES_PID, e + 1, "thread", f"engine {e}", e)
    for it in iterations:
        args = dict(it._asdict(), sequences=it.prefill_seqs + it.decode_seqs,
                    decode_tokens=it.decode_seqs * it.decode_steps)
        del args["engine"], args["start"], args["end"]
        events.append(_complete(it.kind, "iteration", ENGINES_PID, it.engine + 1,
                                _ns(it.start), _ns(it.end), args))
    return events


def call_phases(call: Mapping[str, Any], producers: list[Mapping[str, Any]]
                ) -> list[tuple[str, float, float]]:
    """(phase, start s, end s) of one call (a row of the calls table), tiling sent -> the
    last time it reached (an absent time, -1, merges its phase into the next); ``producers``
    are the rows of the calls it depends on."""
    sent, arrived = call["sent"], call["arrived"]
    finished = [p["finished"] for p in producers]
    ready = max(finished) if producers and min(finished) >= 0 else -1.0
    gates = (ready, max([p["dispatched"] for p in producers])) if producers else ()
    held = arrived > sent and arrived in gates  # its producers decided when it reached the manager
    bounds = [("waiting for inputs" if held else "network-send", arrived),
              ("waiting for inputs", ready if ready > arrived else -1.0),
              ("queued", call["admitted"]), ("prefill", call["first_token"]),
              ("decode", call["finished"]), ("return network", call["returned"])]
    phases, cursor = [], sent
    for name, end in bounds:
        if end < 0:
            continue
        end = max(end, cursor)
        if phases and phases[-1][0] == name:
            phases[-1] = (name, phases[-1][1], end)
        elif end > cursor:
            phases.append((name, cursor, end))
        cursor = end
    return phases


def app_events(calls: pd.DataFrame, deps: Deps, first_tid: int = 1) -> list[Event]:
    """The ``apps`` process: per app one track (a lane per concurrent call; tids from
    ``first_tid`` on) of call events, each with its phases nested inside."""
    events = _named(APPS_PID, 0, "process", "apps", 1)
    rows = calls.to_dict("records")
    by_key = {(r["app_id"], r["call"]): r for r in rows}
    lanes: dict[str, list[tuple[int, int]]] = {}  # app -> (tid, end ns) per lane
    for r in sorted(rows, key=lambda r: r["sent"]):
        producers = [by_key[(r["app_id"], d)] for d in deps.get((r["app_id"], r["call"]), ())]
        phases = call_phases(r, producers)
        t0 = _ns(r["sent"])
        t1 = _ns(phases[-1][2]) if phases else t0
        app_lanes = lanes.setdefault(r["app_id"], [])
        lane = next((i for i, (_, end) in enumerate(app_lanes) if end <= t0), len(app_lanes))
        if lane == len(app_lanes):
            tid = first_tid + sum(map(len, lanes.values()))
            label = r["app_id"] if lane == 0 else f"{r['app_id']} ({lane + 1})"
            events.append(_meta(APPS_PID, tid, "thread_name", label))
            app_lanes.append((tid, t1))
        tid = app_lanes[lane][0]
        app_lanes[lane] = (tid, t1)
        args = {"app_id": r["app_id"], **{k: int(r[k]) for k in (
            "engine", "prompt_len", "cached_len", "output_len", "preemptions")}}
        events.append(_complete(r["call"], "call", APPS_PID, tid, t0, t1, args))
        for name, a, b in phases:
            if _ns(b) > _ns(a):
                events.append(_complete(name, "phase", APPS_PID, tid, _ns(a), _ns(b),
                                        {"call": r["call"]}))
    order = [tid for app_lanes in lanes.values() for tid, _ in app_lanes]  # app by app
    return events + [_meta(APPS_PID, tid, "thread_sort_index", i) for i, tid in enumerate(order)]


def trace_json(events: list[Event], other: Mapping[str, Any]) -> str:
    """The JSON object format, one event per line; ``other`` goes to ``otherData``."""
    body = ",\n".join(json.dumps(e, separators=(",", ":")) for e in events)
    return (f'{{"displayTimeUnit":"ms","otherData":{json.dumps(dict(other))},'
            f'"traceEvents":[\n{body}\n]}}\n')
