"""ShareGPT chat requests (Figs 10 and 19): single-call apps with empirical lengths.

Lengths are resampled from a compact table of the joint distribution of first-turn prompt and
output lengths after vLLM's benchmark filter (``workloads/data/sharegpt_lengths.csv``): the
prompt from its marginal quantiles, the output from the output quantiles of that prompt's
decile (keeping the negative correlation of the two). Samples violating the filter
(prompt + output <= 2048) are redrawn. Arrivals are Poisson, Gamma with a burstiness (vLLM's
benchmark), or at a constant interval (the artifact's Fig 19 chat used 1 s).
"""

from __future__ import annotations

import csv
from functools import cache
from importlib import resources
from typing import ClassVar, Literal

import numpy as np
from pydantic import Field

from parrotsim.workloads.app import App, CallHints, Text
from parrotsim.workloads.app_stream import SingleCallApps
from parrotsim.workloads.arrivals import ArrivalProcess, arrival_times
from parrotsim.workloads.registry import WorkloadConfig, register_workload

NO_HINTS = CallHints()


@cache
def length_table() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(prompt quantile levels, prompt quantiles, output levels, output quantiles[10, k])."""
    text = resources.files("parrotsim.workloads.data").joinpath("sharegpt_lengths.csv").read_text()
    rows = list(csv.DictReader(ln for ln in text.splitlines() if not ln.startswith("#")))
    prompt = [(float(r["quantile"]), float(r["tokens"])) for r in rows if r["table"] == "prompt"]
    out: dict[int, list[tuple[float, float]]] = {}
    for r in rows:
        if r["table"] == "output":
            out.setdefault(int(r["prompt_decile"]), []).append((float(r["quantile"]),
                                                                float(r["tokens"])))
    pq = np.array(prompt)
    oq = np.array([[v for _, v in out[b]] for b in sorted(out)])
    return pq[:, 0], pq[:, 1], np.array([q for q, _ in out[0]]), oq


def sample_lengths(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    """``n`` (prompt, output) token lengths that pass vLLM's benchmark filter."""
    plev, pq, olev, oq = length_table()
    prompts = np.empty(n, dtype=np.int64)
    outputs = np.empty(n, dtype=np.int64)
    filled = 0
    while filled < n:
        k = n - filled
        u, v = rng.random(k), rng.random(k)
        p = np.rint(np.interp(u, plev, pq)).astype(np.int64)
        decile = np.minimum((u * 10).astype(np.int64), 9)
        o = np.empty(k)
        for d in range(len(oq)):  # each prompt decile's output quantiles, over its draws
            rows = decile == d
            o[rows] = np.interp(v[rows], olev, oq[d])
        o = np.rint(o).astype(np.int64)
        ok = (p >= 4) & (o >= 4) & (p <= 1024) & (p + o <= 2048)
        m = int(ok.sum())
        prompts[filled:filled + m] = p[ok]
        outputs[filled:filled + m] = o[ok]
        filled += m
    return prompts, outputs


@register_workload
class ShareGptChat(WorkloadConfig):
    """``num_requests`` ShareGPT chat requests arriving at ``rate`` req/s."""

    kind: Literal["sharegpt"] = "sharegpt"
    figure: ClassVar[str] = "10, 19"
    num_requests: int = Field(default=100, gt=0)
    rate: float = Field(default=5.0, gt=0)
    arrival: ArrivalProcess = "poisson"
    burstiness: float = Field(default=1.0, gt=0)
    start: float = Field(default=0.0, ge=0)

    def build(self, rng: np.random.Generator) -> SingleCallApps:
        return chat_stream(rng, self.num_requests, self.rate, self.arrival, self.burstiness,
                           self.start)


def chat_stream(rng: np.random.Generator, n: int, rate: float, arrival: str = "poisson",
                burstiness: float = 1.0, start: float = 0.0, hints: CallHints = NO_HINTS,
                prefix: str = "chat") -> SingleCallApps:
    """``n`` single-call chat apps (kind ``chat``, ids ``{prefix}-{i}``) with ShareGPT lengths,
    made on demand from arrays (:class:`SingleCallApps`).

    Lengths are drawn first, then arrival times, both from ``rng``. Every prompt is unique
    text (``{prefix}/{i}``); ``hints`` is attached to every call (Fig 19: 16 requests/engine).
    """
    prompts, outputs = sample_lengths(rng, n)
    times = arrival_times(rng, n, rate, arrival, burstiness, start)
    return SingleCallApps(times, outputs, prompts, app_id=f"{prefix}-{{}}".format,
                          prompt=lambda i: (Text(f"{prefix}/{i}", int(prompts[i])),),
                          kind="chat", hints=hints)


def chat_apps(rng: np.random.Generator, n: int, rate: float, arrival: str = "poisson",
              burstiness: float = 1.0, start: float = 0.0, hints: CallHints = NO_HINTS,
              prefix: str = "chat") -> list[App]:
    """The apps of :func:`chat_stream` as a list (for workloads that mix them with others)."""
    return list(chat_stream(rng, n, rate, arrival, burstiness, start, hints, prefix))
