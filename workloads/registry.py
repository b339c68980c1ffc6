"""Workload configs: each workload has a typed, frozen config class registered under its ``kind``.

The experiment schema (``parrotsim.sim.harness.experiment``) builds a tagged union over :data:`WORKLOADS`, so a YAML
file names a workload with ``kind: chain_summary`` and gets that class's fields validated.

A workload that reads input files (a trace) lists the calls they hold with
:meth:`WorkloadConfig.input_calls`, so that they are read, validated and checked against the
cluster when an experiment is expanded, before any run starts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from parrotsim.core.config import StrictConfig
from parrotsim.core.registry import Registry
from parrotsim.workloads.app import App


class WorkloadInputError(ValueError):
    """An input file of a workload that cannot be used; ``field`` is the workload's config
    field naming the file, the message says where (``PATH:LINE: ...``) and what is wrong."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


@dataclass(frozen=True, slots=True)
class InputCall:
    """A call read from a workload's input file before any run: ``field`` names the file's
    config field, ``where`` is ``PATH:LINE``; token counts as in the file (no chat template)."""

    field: str
    where: str
    prompt_tokens: int
    output_tokens: int


class WorkloadConfig(StrictConfig):
    """A workload generator's knobs; :meth:`build` turns them into apps."""

    kind: str
    figure: ClassVar[str] = ""

    def build(self, rng: np.random.Generator) -> list[App]:
        """Generate the apps of one run; ``rng`` is the run's workload random stream."""
        raise NotImplementedError

    def input_calls(self) -> list[InputCall]:
        """Read and validate the workload's input files and list the calls they hold (raises
        :class:`WorkloadInputError`); a generated workload reads none and lists none."""
        return []


WORKLOADS = Registry("workload kind", "kind")
#: class decorator: make a workload config available under its ``kind`` literal
register_workload = WORKLOADS.register
