"""The per-call table of a run, written column by column as calls end.

A client :meth:`CallLog.opens` a call when it sends it and :meth:`CallLog.closes` it once
nothing about it can change any more (its output is back, or it was rejected); closing copies
the call's row into typed columns (8-byte numbers, and references to the call's id strings) and
drops the log's hold on its :class:`~parrotsim.sim.model.request.CallInfo` and engine
sequence, and unlinks the sequence from the info (``seq.request``; ``info.seq`` stays): a cycle
per call would leave every ended call to Python's cyclic collector, whose collections then
come every few thousand calls and walk cold objects, while without it reference counting
frees a call as soon as its owners let go. So the log holds the records of the calls in
flight only, and a compact row per call that ended. :meth:`CallLog.table` writes the calls still open and gives the table of
:mod:`parrotsim.sim.model.metrics` (``CALL_COLUMNS``, one row per call in send order, plus an
``error`` column when some call was rejected) with the dtypes a frame built from the calls'
Python values had: names as pandas infers text (object, or str in pandas 3), int64 for counts and the engine, float64
for times (seconds) - except ``sent``, int64 when every call was sent at an integer time (an
app given an integer arrival), as pandas infers it.
"""

from __future__ import annotations

from array import array

import numpy as np
import pandas as pd

from parrotsim.sim.model.request import CallInfo

CALL_COLUMNS = [
    "app_id", "app_kind", "call", "engine", "sent", "arrived", "dispatched", "engine_arrived",
    "admitted", "first_token", "last_fill", "finished", "returned", "prompt_len", "cached_len",
    "output_len", "preemptions",
]
NAMES = ("app_id", "app_kind", "call")
INTS = ("engine", "prompt_len", "cached_len", "output_len", "preemptions")
TIMES = ("sent", "arrived", "dispatched", "engine_arrived", "admitted", "first_token",
         "last_fill", "finished", "returned")


class CallLog:
    """Column builder of the per-call table (see module docstring)."""

    def __init__(self) -> None:
        self.sent = 0  # calls opened so far
        self._open: dict[int, tuple[int, CallInfo]] = {}  # id(info) -> (send rank, info)
        self._rank = array("q")  # send rank of each written row
        self._names: dict[str, list[str]] = {c: [] for c in NAMES}
        self._ints = {c: array("q") for c in INTS}
        self._times = {c: array("d") for c in TIMES}
        self._errors: dict[int, str] = {}  # send rank -> why the call was rejected
        self._sent_all_int = True

    def opens(self, info: CallInfo) -> None:
        """``info`` was sent now (its row comes at this place in the table)."""
        self._open[id(info)] = (self.sent, info)
        self.sent += 1

    def closes(self, info: CallInfo) -> None:
        """``info`` ended: write its row now (closing a call twice, or one never opened,
        does nothing)."""
        entry = self._open.pop(id(info), None)
        if entry is not None:
            self._write(*entry)
            if info.seq is not None:  # the engine is done with it: break the call's cycle
                info.seq.request = None

    @property
    def in_flight(self) -> int:
        """Calls opened and not closed."""
        return len(self._open)

    def _write(self, rank: int, r: CallInfo) -> None:
        s = r.seq
        names, ints, times = self._names, self._ints, self._times
        self._rank.append(rank)
        names["app_id"].append(r.app_id)
        names["app_kind"].append(r.app_kind)
        names["call"].append(r.call)
        ints["engine"].append(r.engine)
        ints["prompt_len"].append(r.prompt_len)
        ints["output_len"].append(r.output_len if s is None else s.output_len)
        sent = r.sent
        if self._sent_all_int and type(sent) is not int:
            self._sent_all_int = False
        times["sent"].append(sent)
        times["arrived"].append(r.arrived)
        times["dispatched"].append(r.dispatched)
        times["returned"].append(r.returned)
        if s is None:
            for name in ("engine_arrived", "admitted", "first_token", "last_fill", "finished"):
                times[name].append(-1.0)
            ints["cached_len"].append(0)
            ints["preemptions"].append(0)
        else:
            times["engine_arrived"].append(s.arrived)
            times["admitted"].append(s.admitted)
            times["first_token"].append(s.first_token)
            times["last_fill"].append(s.last_fill)
            times["finished"].append(s.finished)
            ints["cached_len"].append(s.cached_len)
            ints["preemptions"].append(s.preemptions)
        if r.error:
            self._errors[rank] = r.error

    def table(self) -> pd.DataFrame:
        """The per-call table, one row per call opened, in send order (writes the calls still
        open first; the log is then empty of open calls)."""
        for rank, info in sorted(self._open.values(), key=lambda e: e[0]):
            self._write(rank, info)
        self._open.clear()
        n = len(self._rank)
        if n == 0:
            return pd.DataFrame([], columns=CALL_COLUMNS)
        where = np.empty(n, dtype=np.int64)  # where[k]: the written row of send rank k
        where[np.frombuffer(self._rank, dtype=np.int64)] = np.arange(n)
        columns: dict[str, np.ndarray] = {}
        for name in CALL_COLUMNS:
            if name in NAMES:
                values = np.empty(n, dtype=object)
                values[:] = self._names[name]
                columns[name] = values[where]
            elif name in INTS:
                columns[name] = np.frombuffer(self._ints[name], dtype=np.int64)[where]
            else:
                columns[name] = np.frombuffer(self._times[name], dtype=np.float64)[where]
        if self._sent_all_int:
            columns["sent"] = columns["sent"].astype(np.int64)
        table = pd.DataFrame(columns, columns=CALL_COLUMNS)
        if self._errors:
            table["error"] = [self._errors.get(k, "") for k in range(n)]
        return table
