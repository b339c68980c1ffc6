"""Replaced engine timers: taken off SimPy's queue in batches, the run unchanged."""

import gc

import pandas as pd
import pytest
import simpy

from parrotsim.sim.harness.config import RunConfig
from parrotsim.sim.harness.simulation import simulate
from parrotsim.sim.model.stale_timers import STALE, StaleTimers, stale_timers


def _fired_log(env: simpy.Environment, times: list[float]) -> tuple[list, list[simpy.Timeout]]:
    fired: list = []
    timers = []
    for k, t in enumerate(times):
        timer = env.timeout(t)
        timer.callbacks.append(lambda _e, k=k: fired.append((env.now, k)))
        timers.append(timer)
    return fired, timers


def test_compaction_removes_only_the_replaced_timers_and_keeps_the_order():
    env = simpy.Environment()
    fired, timers = _fired_log(env, [3.0, 1.0, 2.0, 1.0, 5.0, 2.0, 4.0])  # ties at 1.0, 2.0
    stale = StaleTimers(env)
    for k in (0, 3, 4):
        stale.drop(timers[k])
    assert timers[0].callbacks is STALE and len(env._queue) == 7
    stale.compact()
    assert len(env._queue) == 4 and stale.latest == 5.0 and stale.marked == 0
    env.run()
    assert fired == [(1.0, 1), (2.0, 2), (2.0, 5), (4.0, 6)]  # ties in scheduling order
    assert env.now == 4.0
    stale.settle()  # the removed timeout at 5.0 would have been popped last
    assert env.now == 5.0


def test_drop_compacts_once_the_marked_timers_could_be_half_the_queue():
    env = simpy.Environment()
    _, timers = _fired_log(env, [float(t) for t in range(200)])
    stale = stale_timers(env)
    assert stale_timers(env) is stale  # one per environment
    for timer in timers[:132]:
        stale.drop(timer)
    assert len(env._queue) == 200  # 2 * 132 <= 200 + 64: not yet
    stale.drop(timers[132])
    assert len(env._queue) == 67 and stale.marked == 0


def test_other_environments_keep_replaced_timers_queued_firing_nothing():
    env = simpy.rt.RealtimeEnvironment(factor=1e-6, strict=False)
    fired, timers = _fired_log(env, [1.0, 2.0])
    stale = StaleTimers(env)
    for _ in range(100):
        stale.drop(timers[0])
    assert len(env._queue) == 2
    env.run()
    assert fired == [(2.0, 1)]


CUT_STRETCHES = {  # busy engines whose decode stretches arrivals cut short
    "chat on 6 engines": {
        "workload": {"kind": "sharegpt", "num_requests": 600, "rate": 40.0},
        "cluster": {"engines": 6}},
    "gpts, parrot engines": {
        "workload": {"kind": "gpts", "num_requests": 150, "rate": 6.0},
        "client": {"kind": "parrot"},
        "cluster": {"engines": 2, "profile": "a6000_llama-7b", "prefix_cache": True,
                    "kernel": "shared_prefix", "engine": {"policy": "parrot"},
                    "scheduler": {"policy": "parrot"}}},
}


@pytest.mark.parametrize("raw", CUT_STRETCHES.values(), ids=CUT_STRETCHES.keys())
def test_a_run_with_compaction_equals_one_without(raw):
    cfg = RunConfig.model_validate(raw)
    env = simpy.Environment()
    stale = stale_timers(env)
    stale.compacts = False  # replaced timers stay queued, as before compaction
    kept = simulate(cfg, env=env)
    compacted_env = simpy.Environment()
    compacted = simulate(cfg, env=compacted_env)
    assert stale_timers(compacted_env).latest > 0  # some were removed
    for name in ("calls", "apps", "engines"):
        a, b = getattr(kept, name), getattr(compacted, name)
        assert a.equals(b) and (a.dtypes == b.dtypes).all(), name
    assert pd.Series(kept.summary).equals(pd.Series(compacted.summary))  # NaN equal to NaN
    assert kept.events == compacted.events  # the same events were made


def test_ended_calls_leave_no_garbage_to_the_cyclic_collector():
    """A call and its engine sequence are freed by reference counting once the call ended:
    what a run leaves to the cyclic collector does not grow with its calls."""

    def garbage_after(calls: int) -> int:
        cfg = RunConfig.model_validate({
            "workload": {"kind": "sharegpt", "num_requests": calls, "rate": 20.0},
            "cluster": {"engines": 2}})
        gc.collect()
        gc.disable()
        try:
            simulate(cfg)
            return gc.collect()
        finally:
            gc.enable()

    garbage_after(50)  # first-use caches
    assert garbage_after(400) == garbage_after(100)
