"""Every registered workload: documented, valid apps, deterministic given the rng."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from parrotsim.workloads.app import validate_apps
from parrotsim.workloads.catalog import WORKLOADS
from parrotsim.workloads.registry import WorkloadConfig

from .shared_data import SHARED_DATA

TRACE = SHARED_DATA / "traces" / "splitwise_code.csv"
RANDOM = {"sharegpt", "gpts", "chain_with_background", "trace"}  # arrivals drawn from the rng


def _config(kind: str) -> WorkloadConfig:
    if kind == "trace":
        if not TRACE.is_file():
            pytest.skip(f"{TRACE} not present")
        return WORKLOADS[kind](path=str(TRACE), format="vidur", arrival="poisson", rate=3,
                               limit=200)
    if kind == "chain_with_background":
        return WORKLOADS[kind](background_rate=2, background_horizon=120)
    return WORKLOADS[kind]()


def test_every_module_is_registered():
    expected = {"chain_summary", "map_reduce", "chain_with_background", "bing", "gpts",
                "metagpt", "sharegpt", "mixed", "trace"}
    assert expected <= set(WORKLOADS)


@pytest.mark.parametrize("kind", sorted(WORKLOADS))
def test_documented_valid_and_deterministic(kind):
    cls = WORKLOADS[kind]
    assert cls.figure and cls.__doc__
    module_doc = sys.modules[cls.__module__].__doc__ or ""
    assert "Fig" in module_doc or kind == "trace"
    cfg = _config(kind)
    apps = validate_apps(cfg.build(np.random.default_rng(11)))
    assert apps and apps == cfg.build(np.random.default_rng(11))
    if kind in RANDOM:
        other = cfg.build(np.random.default_rng(12))
        assert [a.arrival for a in apps] != [a.arrival for a in other]
