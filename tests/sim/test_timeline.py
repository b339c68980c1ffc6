"""The timeline export (sim/timeline.py): valid trace events that account for every call's
latency and every engine's busy time, recorded without changing the run."""

from __future__ import annotations

import io
import json
from collections import defaultdict

import pytest

from parrotsim.sim.harness import timeline
from parrotsim.sim.harness.config import RunConfig
from parrotsim.sim.harness.simulation import build_apps, simulate
from parrotsim.workloads.app import call_dependencies

PARROT = {  # Fig 14's Parrot setup on a 2-document map-reduce
    "workload": {"kind": "map_reduce", "docs": [0, 1], "chunk_size": 1024, "output_len": 50},
    "client": {"kind": "parrot"},
    "cluster": {"engine": {"policy": "parrot", "scheduler": "fifo", "max_batch_size": 256,
                           "max_num_batched_tokens": 8000, "max_total_tokens": 45000,
                           "num_kv_cache_blocks": 3500},
                "scheduler": {"policy": "parrot", "dag_aware": True,
                              "max_requests_per_engine": 128, "tokens_capacity": 45000}}}
CASES = {
    "mapreduce_parrot": PARROT,
    "chain_vllm": {"workload": {"kind": "chain_summary", "docs": [3], "output_len": 25},
                   "cluster": {"engine": {"policy": "vllm", "capacity_tokens": 4096}}},
    "chat_2_engines": {  # Poisson arrivals cut fast-forwarded stretches short
        "workload": {"kind": "sharegpt", "num_requests": 40, "rate": 10.0},
        "cluster": {"engines": 2, "scheduler": {"policy": "round_robin"}}},
    "shared_prefix_kernel": {**PARROT, "cluster": {**PARROT["cluster"], "kernel": "shared_prefix",
                                                   "prefix_cache": True}},
}
META_NAMES = {"process_name", "thread_name", "process_sort_index", "thread_sort_index"}


def traced(case: str):
    """(result, trace document, recorder) of one case."""
    cfg = RunConfig.model_validate(CASES[case])
    apps, recorder = build_apps(cfg), timeline.IterationRecorder()
    result = simulate(cfg, apps=apps, validate=False, recorder=recorder)
    deps = {(a.app_id, c.name): call_dependencies(a, c) for a in apps for c in a.calls}
    events = (timeline.engine_events(recorder.iterations, cfg.cluster.engines)
              + timeline.app_events(result.calls, deps, cfg.cluster.engines + 1))
    return result, json.loads(timeline.trace_json(events, {"case": case})), recorder


@pytest.fixture(scope="module", params=list(CASES))
def run(request):
    return traced(request.param)


def assert_valid_trace(doc: dict) -> None:
    """The trace-event format as Perfetto imports it: typed fields on every event, named
    processes and tracks, and complete events that nest properly on each track."""
    assert isinstance(doc["traceEvents"], list) and doc["traceEvents"]
    named, tracks = set(), defaultdict(list)
    for e in doc["traceEvents"]:
        assert {"ph", "pid", "tid", "ts", "name"} <= e.keys(), e
        assert isinstance(e["pid"], int) and isinstance(e["tid"], int) and e["pid"] > 0
        assert isinstance(e["ts"], (int, float)) and e["ts"] >= 0 and isinstance(e["name"], str)
        assert e["ph"] in ("X", "M"), e
        if e["ph"] == "M":
            assert e["name"] in META_NAMES and isinstance(e["args"], dict)
            named.add((e["name"], e["pid"], e["tid"] if e["name"].startswith("thread") else 0))
            continue
        assert isinstance(e["dur"], (int, float)) and e["dur"] >= 0 and isinstance(e["args"], dict)
        for v in (e["ts"], e["dur"]):  # whole nanoseconds: Perfetto rounds us * 1000
            assert abs(v * 1e3 - round(v * 1e3)) < 1e-3
        tracks[e["pid"], e["tid"]].append((round(e["ts"] * 1e3), round(e["dur"] * 1e3)))
    for pid, tid in tracks:
        assert ("process_name", pid, 0) in named and ("thread_name", pid, tid) in named
    assert len({tid for _, tid in tracks}) == len(tracks)  # a tid names one track
    for slices in tracks.values():  # each slice lies after or inside the open ones
        stack: list[int] = []
        for ts, dur in sorted(slices, key=lambda s: (s[0], -s[1])):
            while stack and stack[-1] <= ts:
                stack.pop()
            assert not stack or ts + dur <= stack[-1], "slices overlap without nesting"
            stack.append(ts + dur)


def test_trace_event_format_in_microseconds(run):
    result, doc, _ = run
    assert_valid_trace(doc)
    ends = [e["ts"] + e["dur"] for e in doc["traceEvents"] if e["ph"] == "X"]
    assert max(ends) == pytest.approx(result.calls["returned"].max() * 1e6, abs=1)


def test_call_phases_add_up_to_latency(run):
    result, doc, _ = run
    calls = [e for e in doc["traceEvents"] if e.get("cat") == "call"]
    phases = defaultdict(list)
    for e in doc["traceEvents"]:
        if e.get("cat") == "phase":
            phases[e["pid"], e["tid"], e["args"]["call"]].append(e)
    assert len(calls) == len(result.calls)
    for e in calls:
        row = result.calls[(result.calls["app_id"] == e["args"]["app_id"])
                           & (result.calls["call"] == e["name"])].iloc[0]
        mine = [p for p in phases[e["pid"], e["tid"], e["name"]]
                if e["ts"] <= p["ts"] < e["ts"] + e["dur"]]
        latency = (row["returned"] - row["sent"]) * 1e6
        assert sum(p["dur"] for p in mine) == pytest.approx(latency, abs=1)
        assert e["dur"] == pytest.approx(latency, abs=1)
        assert e["args"]["engine"] == row["engine"] and e["args"]["preemptions"] >= 0


def test_iterations_account_for_busy_time_without_overlap(run):
    result, doc, recorder = run
    by_engine = defaultdict(list)
    for e in doc["traceEvents"]:
        if e.get("cat") == "iteration":
            by_engine[e["tid"] - 1].append(e)
    for _, row in result.engines.iterrows():
        events = sorted(by_engine[row["engine"]], key=lambda e: e["ts"])
        assert sum(e["dur"] for e in events) == pytest.approx(row["busy_time"] * 1e6, abs=1)
        for a, b in zip(events, events[1:], strict=False):
            assert round((a["ts"] + a["dur"]) * 1e3) <= round(b["ts"] * 1e3)
        steps = sum(max(it.decode_steps, 1) for it in recorder.iterations
                    if it.engine == row["engine"])
        assert steps == row["iterations"]  # cut stretches record the steps that ran


def test_parrot_reduce_waits_for_its_maps():
    result, doc, _ = traced("mapreduce_parrot")
    calls = result.calls
    for app in calls["app_id"].unique():
        maps = calls[(calls["app_id"] == app) & (calls["call"] != "reduce")]
        reduce = [e for e in doc["traceEvents"] if e.get("cat") == "phase"
                  and e["name"] == "waiting for inputs" and e["args"]["call"] == "reduce"
                  and e["tid"] == _tid(doc, app, "reduce")]
        assert len(reduce) == 1
        end = reduce[0]["ts"] + reduce[0]["dur"]
        assert end == pytest.approx(maps["finished"].max() * 1e6, abs=1e-3)


def _tid(doc: dict, app: str, call: str) -> int:
    return next(e["tid"] for e in doc["traceEvents"] if e.get("cat") == "call"
                and e["name"] == call and e["args"]["app_id"] == app)


@pytest.mark.parametrize("case", ["mapreduce_parrot", "chat_2_engines"])
def test_recording_leaves_results_byte_identical(case):
    cfg = RunConfig.model_validate(CASES[case])
    plain = simulate(cfg)
    recorded = simulate(cfg, recorder=timeline.IterationRecorder())
    for table in ("calls", "apps", "engines"):
        a, b = io.BytesIO(), io.BytesIO()
        getattr(plain, table).to_parquet(a, index=False)
        getattr(recorded, table).to_parquet(b, index=False)
        assert a.getvalue() == b.getvalue(), table
    assert json.dumps(plain.summary) == json.dumps(recorded.summary)  # NaN-safe
    assert plain.events == recorded.events


@pytest.mark.parametrize("kernel", ["paged", "shared_prefix", "parrot_2023"])
def test_iterations_name_the_engines_kernel(kernel):
    """Each iteration names the kernel its engine runs (the artifact's ``parrot_2023`` was
    once labelled ``shared_prefix``); groups are counted only where the kernel costs them."""
    era = {"paged_kernel": "vllm_0_1_4"} if kernel == "parrot_2023" else {}
    cfg = RunConfig.model_validate({**PARROT, "cluster": {**PARROT["cluster"], "kernel": kernel,
                                                          "prefix_cache": True, **era}})
    recorder = timeline.IterationRecorder()
    simulate(cfg, apps=build_apps(cfg), validate=False, recorder=recorder)
    assert {it.kernel for it in recorder.iterations} == {kernel}
    if kernel != "paged":
        assert any(it.shared_groups for it in recorder.iterations)
