"""A run always ends (issue 21): heartbeats stop, stalls and zero-time iterations raise, a
workload without apps is an error. Each test would hang on the old code; here each takes well
under a second."""

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
