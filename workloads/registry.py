"""Workload configs: each workload has a typed, frozen config class registered under its ``kind``.

The experiment schema (``sim.experiment``) builds a tagged union over :data:`WORKLOADS`, so a YAML
file names a workload with ``kind: chain_summary`` and gets that class's fields validated.
"""

from __future__ import annotations

from typing import ClassVar, TypeVar

import numpy as np
from pydantic import BaseModel, ConfigDict

from workloads.app import App


class StrictConfig(BaseModel):
    """Base of every config: unknown keys are errors, instances are immutable."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class WorkloadConfig(StrictConfig):
    """A workload generator's knobs; :meth:`build` turns them into apps."""

    kind: str
    figure: ClassVar[str] = ""

    def build(self, rng: np.random.Generator) -> list[App]:
        """Generate the apps of one run; ``rng`` is the run's workload random stream."""
        raise NotImplementedError


WORKLOADS: dict[str, type[WorkloadConfig]] = {}
W = TypeVar("W", bound=type[WorkloadConfig])


def register_workload(cls: W) -> W:
    """Class decorator: make a workload config available under its ``kind`` literal."""
    kind = cls.model_fields["kind"].default
    if not isinstance(kind, str) or kind in WORKLOADS:
        raise ValueError(f"workload kind {kind!r} missing or registered twice")
    WORKLOADS[kind] = cls
    return cls
