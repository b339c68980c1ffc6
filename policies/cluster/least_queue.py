"""FastChat's ``shortest_queue`` dispatch (the baselines' load balancer).

The controller picks the worker with the smallest ``queue_length / speed`` (all speeds 1; ties
go to the first worker), then increments that worker's queue length *locally*. The true queue
length (requests in flight on the worker) only replaces the local counter when the worker's
heartbeat arrives, every ``heartbeat_s`` (45 s in FastChat 0.2.32). Between heartbeats the
counter only grows, so during a burst the policy behaves close to round-robin.
"""

from __future__ import annotations

import heapq
from typing import Literal

from pydantic import Field

from parrotsim.sim.model.cluster_policy import (
    ClusterPolicy,
    ClusterPolicyConfig,
    register_cluster_policy,
)


@register_cluster_policy
class LeastQueueConfig(ClusterPolicyConfig):
    """``heartbeat_s`` is FastChat's ``WORKER_HEART_BEAT_INTERVAL``."""

    policy: Literal["least_queue"] = "least_queue"
    heartbeat_s: float = Field(default=45.0, gt=0)

    def make(self, num_engines: int) -> LeastQueue:
        return LeastQueue(num_engines, self.heartbeat_s)


class LeastQueue(ClusterPolicy):
    """Dispatch every queued call at once to the engine with the smallest local counter.

    The counters are kept in a heap of ``(counter, engine index)``, so a dispatch costs
    O(log engines) and ties go to the first engine, as FastChat's scan of its workers did.
    """

    def __init__(self, num_engines: int, heartbeat_s: float) -> None:
        self.counters = [0] * num_engines
        self.heartbeat_interval = heartbeat_s
        self._heap = [(0, i) for i in range(num_engines)]  # sorted: already a heap

    def dispatch(self, queue: list, engines: list, now: float) -> list[tuple[object, int]]:
        out = []
        counters, heap = self.counters, self._heap
        for call in queue:
            count, best = heap[0]  # the smallest counter, ties to the first engine
            heapq.heapreplace(heap, (count + 1, best))
            counters[best] = count + 1
            out.append((call, best))
        return out

    def on_heartbeat(self, engines: list, true_requests: list[int], now: float) -> None:
        self.counters[:] = true_requests
        self._heap = sorted((count, i) for i, count in enumerate(true_requests))
