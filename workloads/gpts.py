"""Requests to four popular GPTs apps, each with its own long system prompt (Fig 17).

Facts (``workloads/data/gpts_apps.csv``, from the artifact's ``gpts/top4.json``): per app the
system-prompt, query and output tokens, e.g. Productivity 7437 / 7 / 704. The artifact
synthesizes prompts as repeated "Test" words of those lengths; the output length is fixed.

Each request is a single-call app (kind ``gpts``, id ``gpts-<app>-<i>``) whose prompt is
``Text("gpts/<app>/system", system)`` shared by every request to that app, then a unique query
``Text("gpts/<app>/query/<i>", query)``. Apps are mixed 1:1:1:1 (``mix: equal``): the artifact
drew requests from a balanced pool with ``random.sample``; here a random permutation of a
balanced list is used (exactly equal counts when ``num_requests`` is a multiple of 4; the order
differs from the artifact's). ``mix: popularity`` draws apps i.i.d. with the recorded real-world
shares instead (not used by the paper). Arrivals: Poisson at ``rate`` req/s (the paper sweeps
0.25-16 with 100-500 requests).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

import numpy as np
from pydantic import Field

from parrotsim.workloads.app import Text
from parrotsim.workloads.app_stream import SingleCallApps
from parrotsim.workloads.arrivals import ArrivalProcess, arrival_times
from parrotsim.workloads.registry import WorkloadConfig, register_workload
from parrotsim.workloads.tables import read_table


@dataclass(frozen=True, slots=True)
class GptsApp:
    """One GPTs app: token counts of its system prompt, a user query and the output."""

    app: str
    name: str
    system_tokens: int
    query_tokens: int
    output_tokens: int
    share: float


def gpts_apps() -> list[GptsApp]:
    """The four apps in table order (Productivity, Image Generation, Programming, Data Analysis)."""
    return [GptsApp(r["app"], r["name"], int(r["system_tokens"]), int(r["query_tokens"]),
                    int(r["output_tokens"]), float(r["share"]))
            for r in read_table("gpts_apps.csv")]


def pick_apps(rng: np.random.Generator, n: int, mix: str) -> np.ndarray:
    """Index into :func:`gpts_apps` of each of ``n`` requests."""
    apps = gpts_apps()
    if mix == "equal":
        return rng.permutation(np.arange(n) % len(apps))
    shares = np.array([a.share for a in apps])
    return rng.choice(len(apps), size=n, p=shares / shares.sum())


@register_workload
class Gpts(WorkloadConfig):
    """``num_requests`` requests to the four GPTs apps arriving at ``rate`` req/s."""

    kind: Literal["gpts"] = "gpts"
    figure: ClassVar[str] = "17"
    num_requests: int = Field(default=500, gt=0)
    rate: float = Field(default=4.0, gt=0)
    arrival: ArrivalProcess = "poisson"
    burstiness: float = Field(default=1.0, gt=0)
    mix: Literal["equal", "popularity"] = "equal"
    start: float = Field(default=0.0, ge=0)

    def build(self, rng: np.random.Generator) -> SingleCallApps:
        apps = gpts_apps()
        which = pick_apps(rng, self.num_requests, self.mix)
        times = arrival_times(rng, self.num_requests, self.rate, self.arrival, self.burstiness,
                              self.start)
        names = [a.app for a in apps]
        output = np.array([a.output_tokens for a in apps], dtype=np.int64)[which]
        prompt = np.array([a.system_tokens + a.query_tokens for a in apps],
                          dtype=np.int64)[which]

        def make_prompt(i: int) -> tuple[Text, Text]:
            a = apps[int(which[i])]
            return (Text(f"gpts/{a.app}/system", a.system_tokens),
                    Text(f"gpts/{a.app}/query/{i}", a.query_tokens))

        return SingleCallApps(times, output, prompt,
                              app_id=lambda i: f"gpts-{names[int(which[i])]}-{i}",
                              prompt=make_prompt, kind="gpts")
