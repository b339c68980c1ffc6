"""Replay a public request trace as single-call apps (``kind: trace``).

Each accepted row of the file at ``path`` (format per ``parrotsim.workloads.traces``) becomes one app
(kind ``trace``, id ``trace-<i>``) whose prompt is one unique text of the row's prompt tokens
(traces carry no content, so no sharing is visible) and which generates the row's output tokens.

Arrivals: ``arrival: trace`` uses the trace's own times, made relative to the earliest loaded
row, divided by ``speedup`` (2 = twice as fast) and shifted by ``start`` seconds; apps are then
ordered by arrival (stable). Formats without times (Vidur length tables without
``arrived_at``, ShareGPT) need a process instead: ``poisson``, ``gamma`` (shape
``burstiness``) or ``constant`` at ``rate`` requests/s, drawn from the run's workload stream.
``limit`` keeps the first N accepted rows. A relative ``path`` is relative to the working
directory.
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar, Literal

import numpy as np
from pydantic import Field, model_validator

from parrotsim.workloads.app import App, Text, single_call_app
from parrotsim.workloads.arrivals import arrival_times
from parrotsim.workloads.registry import WorkloadConfig, register_workload
from parrotsim.workloads.traces import TraceFormat, load_trace


@register_workload
class TraceReplay(WorkloadConfig):
    """Requests of a trace file (Azure, Vidur/Sarathi lengths, ShareGPT JSON, BurstGPT)."""

    kind: Literal["trace"] = "trace"
    figure: ClassVar[str] = "-"
    path: str
    format: TraceFormat = "azure"
    arrival: Literal["trace", "poisson", "gamma", "constant"] = "trace"
    rate: float | None = Field(default=None, gt=0)
    burstiness: float = Field(default=1.0, gt=0)
    speedup: float = Field(default=1.0, gt=0)
    start: float = Field(default=0.0, ge=0)
    limit: int | None = Field(default=None, gt=0)
    models: list[str] | None = None
    chars_per_token: float = Field(default=4.0, gt=0)

    @model_validator(mode="after")
    def _check(self) -> TraceReplay:
        if self.arrival != "trace" and self.rate is None:
            raise ValueError(f"arrival {self.arrival!r} needs a rate (requests/s)")
        if self.models is not None and self.format != "burstgpt":
            raise ValueError("models only applies to format 'burstgpt'")
        if not Path(self.path).is_file():
            raise ValueError(f"trace file not found: {self.path}")
        return self

    def input_files(self) -> dict[str, str]:
        """The files this workload reads, by field (their content is in the run's cache key)."""
        return {"path": self.path}

    def build(self, rng: np.random.Generator) -> list[App]:
        trace = load_trace(self.path, self.format, self.limit, self.models, self.chars_per_token)
        reqs = trace.requests
        if self.arrival == "trace":
            if any(r.time is None for r in reqs):
                raise ValueError(f"{self.path}: format {self.format!r} has no arrival times here;"
                                 " choose arrival poisson, gamma or constant with a rate")
            raw = np.array([r.time for r in reqs], dtype=float)
            times = self.start + (raw - (raw.min() if len(raw) else 0.0)) / self.speedup
        else:
            assert self.rate is not None
            times = arrival_times(rng, len(reqs), self.rate, self.arrival, self.burstiness,
                                  self.start)
        order = np.argsort(times, kind="stable")
        return [single_call_app(f"trace-{i}", float(times[k]),
                                (Text(f"trace/{i}", reqs[k].prompt_tokens),),
                                reqs[k].output_tokens, kind="trace")
                for i, k in enumerate(order)]
