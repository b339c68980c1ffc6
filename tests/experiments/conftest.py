"""Shared fixtures: tiny experiment files (ShareGPT, 20 requests: a run takes ~0.05 s)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from parrotsim.sim.harness import store

TINY = """\
name: tiny
run:
  workload: {kind: sharegpt, num_requests: 20, rate: 10.0}
variants:
  capped: {cluster.engine: {policy: vllm, capacity_tokens: 4096}}
  uncapped: {cluster.engine: {policy: vllm}}
sweep:
  cluster.engines: [1, 2]
  cluster.scheduler.policy: [least_queue, round_robin]
seeds: [0, 1]
exclude:
  - {cluster.engines: 1, cluster.scheduler.policy: round_robin}
"""


@pytest.fixture
def write_yaml(tmp_path: Path):
    """Write dedented YAML text to ``tmp_path/name`` and return its path."""

    def write(text: str, name: str = "exp.yaml") -> Path:
        path = tmp_path / name
        path.write_text(textwrap.dedent(text))
        return path

    return write


@pytest.fixture
def tiny(write_yaml) -> Path:
    """2 variants x (3 of 4 engine/scheduler combos) x 2 seeds = 12 runs."""
    return write_yaml(TINY, "tiny.yaml")


class SimulateSpy:
    """Records every config ``simulate`` is called with; ``fail(cfg)`` True makes it raise."""

    def __init__(self, real) -> None:
        self.real = real
        self.configs: list = []
        self.fail = lambda cfg: False

    def __call__(self, cfg, apps=None):
        self.configs.append(cfg)
        if self.fail(cfg):
            raise RuntimeError("boom")
        return self.real(cfg, apps)

    def __len__(self) -> int:
        return len(self.configs)


@pytest.fixture
def spy(monkeypatch) -> SimulateSpy:
    """Replace the store's ``simulate`` in this process (use with jobs=1)."""
    spy = SimulateSpy(store.simulate)
    monkeypatch.setattr(store, "simulate", spy)
    return spy
