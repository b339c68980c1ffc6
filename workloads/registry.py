"""Workload configs: each workload has a typed, frozen config class registered under its ``kind``.

The experiment schema (``parrotsim.sim.harness.experiment``) builds a tagged union over :data:`WORKLOADS`, so a YAML
file names a workload with ``kind: chain_summary`` and gets that class's fields validated.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from parrotsim.core.config import StrictConfig
from parrotsim.core.registry import Registry
from parrotsim.workloads.app import App


class WorkloadConfig(StrictConfig):
    """A workload generator's knobs; :meth:`build` turns them into apps."""

    kind: str
    figure: ClassVar[str] = ""

    def build(self, rng: np.random.Generator) -> list[App]:
        """Generate the apps of one run; ``rng`` is the run's workload random stream."""
        raise NotImplementedError


WORKLOADS = Registry("workload kind", "kind")
#: class decorator: make a workload config available under its ``kind`` literal
register_workload = WORKLOADS.register
