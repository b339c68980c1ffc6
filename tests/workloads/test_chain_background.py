"""Fig 12a: the chain plus a synthetic Poisson background stream."""

from __future__ import annotations

import numpy as np

from parrotsim.workloads.app import prompt_tokens, validate_apps
from parrotsim.workloads.chain_background import ChainWithBackground


def test_background_requests_are_the_artifacts():
    cfg = ChainWithBackground(docs=[2], background_rate=3.5, background_horizon=600)
    apps = validate_apps(cfg.build(np.random.default_rng(7)))
    chain, bg = apps[0], apps[1:]
    assert chain.kind == "chain_summary" and not chain.background
    assert chain.submit == "concurrent"
    assert all(a.kind == "background" and a.background for a in bg)
    assert all(prompt_tokens(a, a.calls[0]) == 513 and a.calls[0].output_tokens == 50
               for a in bg)
    assert len({a.calls[0].prompt for a in bg}) == 1  # one identical "Test " * 512 prompt
    times = np.array([a.arrival for a in bg])
    assert np.all(np.diff(times) > 0) and times[0] > 0 and times[-1] < 600
    assert abs(len(bg) - 3.5 * 600) < 4 * np.sqrt(3.5 * 600)
    gaps = np.diff(times)
    assert abs(gaps.std() / gaps.mean() - 1.0) < 0.1  # exponential gaps


def test_rate_zero_is_the_chain_alone():
    apps = ChainWithBackground(background_rate=0).build(np.random.default_rng(0))
    assert [a.app_id for a in apps] == ["chain-0"]


def test_seeds():
    cfg = ChainWithBackground(background_rate=2, background_horizon=100)
    a = cfg.build(np.random.default_rng(1))
    assert a == cfg.build(np.random.default_rng(1))
    b = cfg.build(np.random.default_rng(2))
    assert [x.arrival for x in a[1:5]] != [x.arrival for x in b[1:5]]
