"""Mixed chat and map-reduce serving on a cluster (Fig 19), as the artifact scheduled it.

* Chat: ``num_chats`` = 40 ShareGPT requests (lengths as ``parrotsim.workloads.sharegpt``) at ``chat_rate``
  = 1 req/s with a constant interval (the artifact's Poisson line is commented out), from t = 0.
  Each chat call carries ``max_requests_per_engine`` = 16 (Parrot's latency annotation).
* Map-reduce: ``mr_apps`` = 9 apps, all on ``arxiv_march_10`` document 0 at chunk 1024 (75 maps
  of about 450 tokens plus the 30-token template) and output 50, the first at ``mr_start`` = 15 s.
  The artifact launches an app, then sleeps the next entry of ``mr_gaps``
  ([0.5, 0.5, 10] three times), so app k arrives at 15 + sum(gaps[:k]) s: three bursts of
  three. The reduce carries ``max_requests_per_engine`` = 32; maps carry no hint.
"""

from __future__ import annotations

from typing import ClassVar, Literal

import numpy as np
from pydantic import Field, model_validator

from parrotsim.workloads.app import App, CallHints
from parrotsim.workloads.arrivals import ArrivalProcess
from parrotsim.workloads.arxiv import DocSet
from parrotsim.workloads.registry import WorkloadConfig, register_workload
from parrotsim.workloads.sharegpt import chat_apps
from parrotsim.workloads.summarization import check_docs, map_reduce_app

MR_GAPS = (0.5, 0.5, 10.0, 0.5, 0.5, 10.0, 0.5, 0.5, 10.0)


def mr_arrivals(start: float, gaps: list[float], n: int) -> list[float]:
    """Arrival (s) of each of ``n`` apps: ``start``, then after each gap in turn (cycled)."""
    times, t = [], start
    for k in range(n):
        times.append(t)
        t += gaps[k % len(gaps)]
    return times


@register_workload
class MixedChatMapReduce(WorkloadConfig):
    """Fig 19: a constant-rate chat stream plus bursts of map-reduce apps on one document."""

    kind: Literal["mixed"] = "mixed"
    figure: ClassVar[str] = "19"
    num_chats: int = Field(default=40, ge=0)
    chat_rate: float = Field(default=1.0, gt=0)
    chat_arrival: ArrivalProcess = "constant"
    chat_max_requests: int | None = Field(default=16, gt=0)
    mr_apps: int = Field(default=9, ge=0)
    mr_start: float = Field(default=15.0, ge=0)
    mr_gaps: list[float] = Field(default=list(MR_GAPS), min_length=1)
    doc_set: DocSet = "arxiv_march_10"
    doc: int = Field(default=0, ge=0)
    chunk_size: Literal[512, 1024, 1536, 2048] = 1024
    output_len: int = Field(default=50, gt=0)
    reduce_max_requests: int | None = Field(default=32, gt=0)

    @model_validator(mode="after")
    def _check(self) -> MixedChatMapReduce:
        if any(g < 0 for g in self.mr_gaps):
            raise ValueError("mr_gaps must be non-negative seconds")
        if self.num_chats + self.mr_apps == 0:
            raise ValueError("num_chats and mr_apps are both 0: no apps")
        check_docs(self.doc_set, [self.doc], self.chunk_size)
        return self

    def build(self, rng: np.random.Generator) -> list[App]:
        chats = chat_apps(rng, self.num_chats, self.chat_rate, self.chat_arrival,
                          hints=CallHints(max_requests_per_engine=self.chat_max_requests))
        reduce_hints = CallHints(max_requests_per_engine=self.reduce_max_requests)
        mrs = [map_reduce_app(f"mapreduce-{k}", t, self.doc_set, self.doc, self.chunk_size,
                              self.output_len, reduce_hints=reduce_hints)
               for k, t in enumerate(mr_arrivals(self.mr_start, self.mr_gaps, self.mr_apps))]
        return chats + mrs
