"""CallLog: rows written as calls end, in send order, with the dtypes of the per-call frame."""

import pandas as pd

from parrotsim.sim.model.call_log import CALL_COLUMNS, CallLog
from parrotsim.sim.model.request import CallInfo
from parrotsim.sim.model.sequence import Sequence


def info(uid: int, sent, returned: float = -1.0, error: str = "", served: bool = True):
    i = CallInfo(uid, f"app-{uid}", uid, "call", 10 + uid, 5, app_kind="chat", sent=sent,
                 returned=returned, engine=uid % 2, error=error)
    if served:
        s = Sequence(uid, i.app_id, "call", i.prompt_len, 5, cached_len=uid, request=i)
        s.arrived, s.admitted, s.first_token, s.finished = sent + .1, sent + .2, sent + .3, 9.0
        s.preemptions = uid
        i.seq = s
    return i


def as_frame(calls: list[CallInfo]) -> pd.DataFrame:
    """The frame built from the calls' Python values, as the table was before the log."""
    return pd.DataFrame([(
        r.app_id, r.app_kind, r.call, r.engine, r.sent, r.arrived, r.dispatched,
        r.seq.arrived if r.seq else -1.0, r.seq.admitted if r.seq else -1.0,
        r.seq.first_token if r.seq else -1.0, r.seq.last_fill if r.seq else -1.0,
        r.seq.finished if r.seq else -1.0, r.returned, r.prompt_len,
        r.seq.cached_len if r.seq else 0, r.output_len, r.seq.preemptions if r.seq else 0,
    ) for r in calls], columns=CALL_COLUMNS)


def test_rows_come_in_send_order_whatever_order_calls_end():
    calls = [info(k, 0.5 * k, returned=3.0 + k) for k in range(5)]
    calls[3].error = "rejected by engine 1: too long"
    log = CallLog()
    for c in calls:
        log.opens(c)
    for k in (2, 0, 4):
        log.closes(calls[k])
    log.closes(calls[2])  # a second close does nothing
    assert log.in_flight == 2
    table = log.table()  # calls 1 and 3 are still open: written at the end
    expected = as_frame(calls)
    expected["error"] = ["", "", "", "rejected by engine 1: too long", ""]
    pd.testing.assert_frame_equal(table, expected)
    assert log.in_flight == 0


def test_calls_never_served_and_integer_send_times_keep_the_frame_dtypes():
    calls = [info(0, 0, served=False), info(1, 2)]  # integer times: sent is an int column
    log = CallLog()
    for c in calls:
        log.opens(c)
        log.closes(c)
    table = log.table()
    pd.testing.assert_frame_equal(table, as_frame(calls))
    assert table["sent"].dtype == "int64" and "error" not in table
    mixed = [info(0, 0), info(1, 1.5)]
    log = CallLog()
    for c in mixed:
        log.opens(c)
    pd.testing.assert_frame_equal(log.table(), as_frame(mixed))


def test_an_empty_log_gives_the_empty_frame():
    pd.testing.assert_frame_equal(CallLog().table(), pd.DataFrame([], columns=CALL_COLUMNS))


def test_closing_a_call_unlinks_its_sequence_from_it():
    """The call keeps its sequence (its row's times); the sequence, which the engine is done
    with, drops the call: no reference cycle is left for the cyclic collector."""
    served, rejected = info(0, 0.0), info(1, 0.0, served=False)
    log = CallLog()
    for c in (served, rejected):
        log.opens(c)
        log.closes(c)
    assert served.seq is not None and served.seq.request is None
    assert rejected.seq is None
