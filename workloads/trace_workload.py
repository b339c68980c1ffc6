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

The file is read and validated when an experiment is expanded (:meth:`TraceReplay.input_calls`),
so a corrupt row, or a trace without a single request, is an error of the experiment file that
names ``PATH:LINE`` before any run starts. A parsed trace is kept per process (the two latest
files, keyed by path, size and times), so the runs of a sweep read it once.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import ClassVar, Literal

import numpy as np
from pydantic import Field, model_validator

from parrotsim.workloads.app import App, Text, single_call_app
from parrotsim.workloads.arrivals import arrival_times
from parrotsim.workloads.registry import (
    InputCall,
    WorkloadConfig,
    WorkloadInputError,
    register_workload,
)
from parrotsim.workloads.traces import Trace, TraceError, TraceFormat, load_trace


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

    def trace(self) -> Trace:
        """The file's accepted rows (raises :class:`WorkloadInputError` for a bad file, or one
        without any request to replay)."""
        try:
            st = Path(self.path).stat()
            trace = _load(self.path, str(Path(self.path).resolve()), st.st_size, st.st_mtime_ns,
                          st.st_ctime_ns, self.format, self.limit,
                          None if self.models is None else tuple(self.models),
                          self.chars_per_token)
        except TraceError as exc:
            raise WorkloadInputError("path", str(exc)) from None
        except OSError as exc:
            raise WorkloadInputError("path", f"{self.path}: cannot read: {exc.strerror}") from None
        if not trace.requests:
            raise WorkloadInputError("path", f"{self.path}: no request to replay (rows "
                                     f"skipped: {trace.skipped}); a run needs at least one app")
        untimed = next((r for r in trace.requests if r.time is None), None)
        if self.arrival == "trace" and untimed is not None:
            raise WorkloadInputError("arrival", f"{self.path}:{untimed.line}: format "
                                     f"{self.format!r} has no arrival times here; choose arrival "
                                     "poisson, gamma or constant with a rate")
        return trace

    def input_calls(self) -> list[InputCall]:
        """One call per accepted row, at ``PATH:LINE``."""
        return [InputCall("path", f"{self.path}:{r.line}", r.prompt_tokens, r.output_tokens)
                for r in self.trace().requests]

    def build(self, rng: np.random.Generator) -> list[App]:
        reqs = self.trace().requests
        if self.arrival == "trace":
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


@lru_cache(maxsize=2)
def _load(shown: str, path: str, size: int, mtime_ns: int, ctime_ns: int, fmt: TraceFormat,
          limit: int | None, models: tuple[str, ...] | None, chars_per_token: float) -> Trace:
    """:func:`load_trace` of ``path`` (named ``shown`` in errors), kept for the latest files
    (keyed by size and times too: an edited file is read again)."""
    return load_trace(shown, fmt, limit, None if models is None else list(models),
                      chars_per_token)
