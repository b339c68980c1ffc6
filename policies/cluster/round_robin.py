"""Round-robin dispatch: queued calls go to engines 0, 1, 2, ... in turn, all at once."""

from __future__ import annotations

from typing import Literal

from parrotsim.sim.model.cluster_policy import (
    ClusterPolicy,
    ClusterPolicyConfig,
    register_cluster_policy,
)


@register_cluster_policy
class RoundRobinConfig(ClusterPolicyConfig):
    policy: Literal["round_robin"] = "round_robin"

    def make(self, num_engines: int) -> RoundRobin:
        return RoundRobin(num_engines)


class RoundRobin(ClusterPolicy):
    def __init__(self, num_engines: int) -> None:
        self.num_engines = num_engines
        self.next = 0

    def dispatch(self, queue: list, engines: list, now: float) -> list[tuple[object, int]]:
        out = []
        for call in queue:
            out.append((call, self.next))
            self.next = (self.next + 1) % self.num_engines
        return out
