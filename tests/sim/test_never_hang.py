"""A run always ends (issue 21): heartbeats stop, stalls and zero-time iterations raise, a
workload without apps is an error, a call no engine can run is rejected and fails its app.
Most tests would hang on the old code; here each takes well under a second."""

from __future__ import annotations

import math

import pytest
import simpy

from parrotsim.policies.cluster.least_queue import LeastQueue
from parrotsim.policies.engine.vllm import VllmPolicy
from parrotsim.sim.harness.config import RunConfig
from parrotsim.sim.harness.simulation import StalledRun, simulate
from parrotsim.sim.model.manager import Manager
from parrotsim.sim.model.sequence import Batch
from parrotsim.workloads.app import App, AppError, Call, Ref, Text
from tests.sim.helpers import a100_13b

CHAT = {"workload": {"kind": "sharegpt", "num_requests": 5, "rate": 5.0}}


def test_heartbeats_stop_when_nothing_is_left():
    """least_queue's heartbeat process was the one event left forever: env.run() never
    returned. Now the first heartbeat that finds nothing scheduled is the last."""
    env = simpy.Environment()
    Manager(env, [], LeastQueue(0, heartbeat_s=45.0), on_done=lambda info, seq: None)
    env.run()
    assert env.now == 45.0


def test_heartbeats_go_on_while_something_is_scheduled():
    env = simpy.Environment()
    Manager(env, [], LeastQueue(0, heartbeat_s=1.0), on_done=lambda info, seq: None)
    env.timeout(10.5)
    env.run()
    assert env.now == 11.0


def test_stalled_run_raises(monkeypatch):
    """An engine policy that never runs what it holds leaves no event: the run stops with
    StalledRun naming what is held, under either scheduler (SimPy's 'No scheduled events
    left' with round_robin; an endless heartbeat with least_queue)."""
    monkeypatch.setattr(VllmPolicy, "schedule", lambda self, state: Batch())
    for scheduler in ("least_queue", "round_robin"):
        cfg = RunConfig.model_validate({**CHAT, "cluster": {"scheduler": {"policy": scheduler}}})
        with pytest.raises(StalledRun, match=r"5 of 5 apps never finished .*engine 0: 5 wait"):
            simulate(cfg)


def test_no_apps_is_an_error():
    with pytest.raises(ValueError, match="no apps"):
        simulate(RunConfig.model_validate(CHAT), apps=[])


def test_iteration_that_takes_no_time_raises():
    """A profile built in code (no load-time check) whose iterations take 0 s would keep the
    clock still; the engine refuses to run such an iteration."""
    prof = a100_13b()
    data = prof.model_dump()
    data["curves"]["iteration_overhead_s"] = 0.0
    for name in ("linear", "decode_paged", "prefill_attention"):
        data["curves"][name]["seconds"] = [0.0] * len(data["curves"][name]["x"])
    data["runtimes"] = {}
    zero = type(prof).model_validate(data)
    with pytest.raises(ValueError, match="would take 0 s; every iteration must take a positive"):
        simulate(RunConfig.model_validate(CHAT), profile=zero)
    assert math.isfinite(simulate(RunConfig.model_validate(CHAT), profile=prof)
                         .summary["mean_jct"])


# ---- calls no engine can ever run are rejected: their apps fail, the run ends ----------------

def chain(app_id: str, arrival: float, second_prompt: int) -> App:
    """Two calls: the second reads the first's output and ``second_prompt`` tokens of text."""
    first = Call("first", (Text(f"{app_id}/a", 100),), "a", 20)
    second = Call("second", (Ref("a"), Text(f"{app_id}/b", second_prompt)), "b", 20)
    return App(app_id, arrival, (first, second), ("b",), kind="chain")


@pytest.mark.parametrize("scheduler", ["least_queue", "round_robin"])
def test_calls_no_engine_can_hold_are_rejected(scheduler):
    """capacity_tokens: 16 leaves one KV block: no chat prompt fits. This hung (least_queue)
    or ended in SimPy's 'No scheduled events left' (round_robin)."""
    cfg = RunConfig.model_validate({**CHAT, "cluster": {
        "scheduler": {"policy": scheduler},
        "engine": {"policy": "vllm", "capacity_tokens": 16}}})
    result = simulate(cfg)
    assert len(result.rejected) == 5 and (result.calls["returned"] == -1).all()
    assert result.calls["error"].str.startswith("rejected by engine 0: its prompt needs").all()
    assert result.apps["end"].isna().all() and result.summary["apps"] == 5
    assert math.isnan(result.summary["mean_jct"]) and result.summary["calls"] == 0
    assert result.rejection_message().startswith("5 of 5 calls can never run")


@pytest.mark.parametrize("client", ["langchain", "parrot"])
def test_a_rejected_call_fails_only_its_app(client):
    """The second call of one chain is longer than one vLLM iteration fills (8000 tokens):
    that app fails when the call reaches its engine; its first call ran, the other apps
    complete and the metrics cover them alone."""
    client_cfg = {"kind": client} if client == "langchain" else {"kind": client,
                                                                 "readiness": "complete"}
    cfg = RunConfig.model_validate({**CHAT, "client": client_cfg})
    apps = [chain("ok-0", 0.0, 500), chain("long", 0.1, 9000), chain("ok-1", 0.2, 500)]
    result = simulate(cfg, apps=apps)
    calls = result.calls.set_index(["app_id", "call"])
    assert calls.loc[("long", "second"), "error"].endswith("the engine does not split prompts")
    assert calls.loc[("long", "first"), "returned"] > 0
    assert (calls.drop(index=[("long", "second")])["error"] == "").all()
    ends = result.apps.set_index("app_id")["end"]
    assert math.isnan(ends["long"]) and ends[["ok-0", "ok-1"]].gt(0).all()
    lat = result.apps.set_index("app_id")["latency"]
    assert result.summary["mean_jct"] == pytest.approx(lat[["ok-0", "ok-1"]].mean())


def test_a_run_without_rejections_has_no_error_column():
    result = simulate(RunConfig.model_validate(CHAT))
    assert "error" not in result.calls and result.rejected.empty
    assert result.rejection_message() == ""


def test_app_arriving_at_infinity_is_an_error():
    """An app generated in code (no config validation) that would arrive never."""
    app = chain("late", math.inf, 100)
    with pytest.raises(AppError, match="late: arrival time must be a finite number of seconds"):
        simulate(RunConfig.model_validate(CHAT), apps=[app])
