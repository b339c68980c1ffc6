"""A run collects its youngest garbage generation only every GC_YOUNG_THRESHOLD allocations
and gives the caller's collection thresholds back afterwards, also when it fails."""

from __future__ import annotations

import gc

import pytest

from parrotsim.sim.harness.config import RunConfig
from parrotsim.sim.harness.simulation import GC_YOUNG_THRESHOLD, simulate

CHAT = {"workload": {"kind": "sharegpt", "num_requests": 20, "rate": 10.0},
        "cluster": {"engines": 2}}


def test_a_run_collects_rarely_and_restores_the_thresholds():
    seen = []
    before = gc.get_threshold()
    gc.set_threshold(700, 9, 8)
    try:
        simulate(RunConfig.model_validate(CHAT),
                 recorder=lambda *_: seen.append(gc.get_threshold()))
        assert gc.get_threshold() == (700, 9, 8)
    finally:
        gc.set_threshold(*before)
    assert seen and set(seen) == {(GC_YOUNG_THRESHOLD, 20, 100)}
    assert GC_YOUNG_THRESHOLD >= 500_000


def test_a_failing_run_restores_the_thresholds():
    def fail(*_):
        raise RuntimeError("stop")

    before = gc.get_threshold()
    gc.set_threshold(700, 9, 8)
    try:
        with pytest.raises(RuntimeError, match="stop"):
            simulate(RunConfig.model_validate(CHAT), recorder=fail)
        assert gc.get_threshold() == (700, 9, 8)
    finally:
        gc.set_threshold(*before)
