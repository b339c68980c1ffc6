"""The engine-level driver of the paper's Bing Copilot benchmark (Figs 15, 16).

Not a real scheduler: the artifact drove one engine directly with a fixed pool of ``slots``
batch slots; a slot runs one request (fill, then generate to its length) and is refilled with
the next request in FIFO order when it finishes. Here that is a dispatcher that keeps at most
``slots`` calls on each engine, taking queued calls in order.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from parrotsim.sim.model.cluster_policy import (
    CallInfo,
    ClusterPolicy,
    ClusterPolicyConfig,
    EngineLoad,
    register_cluster_policy,
)


@register_cluster_policy
class SlotsConfig(ClusterPolicyConfig):
    """``slots``: the benchmark's batch size (8, 16, 32, 64 in Fig 15)."""

    policy: Literal["slots"] = "slots"
    slots: int = Field(default=8, gt=0)

    def make(self, num_engines: int) -> Slots:
        return Slots(self.slots)


class Slots(ClusterPolicy):
    """Fill each engine's free slots with queued calls, FIFO."""

    def __init__(self, slots: int) -> None:
        self.slots = slots

    def dispatch(self, queue: list[CallInfo], engines: list[EngineLoad],
                 now: float) -> list[tuple[CallInfo, int]]:
        free = [self.slots - e.num_requests for e in engines]
        out = []
        engine = 0
        for call in queue:
            while engine < len(free) and free[engine] <= 0:
                engine += 1
            if engine == len(free):
                break
            free[engine] -= 1
            out.append((call, engine))
        return out
