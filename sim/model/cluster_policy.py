"""What a cluster scheduler sees and decides.

The manager holds calls that are ready to run (``queue``, in the order they became ready) and
asks the policy on every event (a call arrives or becomes ready, a call finishes, a heartbeat):
``dispatch`` returns the (queued call, engine index) pairs to start now. Calls are described by
:class:`~parrotsim.sim.model.request.CallInfo` and engines by :class:`EngineLoad`, which the manager keeps up to date with
what a real scheduler could know (its own dispatch accounting, the prefix contexts each engine
holds), never an engine's progress inside an iteration. Policies never touch time or SimPy.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from parrotsim.core.config import StrictConfig
from parrotsim.core.registry import Registry
from parrotsim.sim.model.request import CallInfo, Objective

__all__ = ["CLUSTER_POLICIES", "CallInfo", "ClusterPolicy", "ClusterPolicyConfig", "EngineLoad",
           "Objective", "register_cluster_policy"]

@dataclass(slots=True)
class EngineLoad:
    """One engine as the manager knows it.

    ``num_requests``/``reserved_tokens`` count dispatched, unfinished calls (tokens = prompt +
    output of each); ``max_requests`` and ``tokens_capacity`` are the engine's admission limits
    (Parrot's ``threads_capacity``/``tokens_capacity``); ``requests_bound`` is the smallest
    ``max_requests`` hint among its calls; ``prefixes`` the prefix keys whose context it holds;
    ``latency_calls`` how many of its calls are latency-sensitive.
    """

    engine_id: int
    num_requests: int = 0
    reserved_tokens: int = 0
    max_requests: int = 1 << 30
    tokens_capacity: int = 1 << 60
    requests_bound: int = 1 << 30
    prefixes: set[str] = field(default_factory=set)
    latency_calls: int = 0
    bounds: list[int] = field(default_factory=list)


class ClusterPolicy:
    """Base class of cluster schedulers."""

    #: seconds between worker heartbeats the policy wants to hear (None: none)
    heartbeat_interval: float | None = None

    def dispatch(self, queue: list[CallInfo], engines: list[EngineLoad],
                 now: float) -> list[tuple[CallInfo, int]]:
        raise NotImplementedError

    def objective(self, call: CallInfo) -> Objective | None:
        """The call's objective as this policy uses it (counts ``EngineLoad.latency_calls``)."""
        return call.objective

    def call_bound(self, call: CallInfo) -> int | None:
        """Most requests an engine may hold while ``call`` runs there (``None``: no bound); the
        manager keeps ``EngineLoad.requests_bound`` as the minimum over an engine's calls."""
        return call.max_requests

    def on_heartbeat(self, engines: list[EngineLoad], true_requests: list[int],
                     now: float) -> None:
        """Worker heartbeats carrying each engine's true number of requests arrive."""

    def on_finish(self, call: CallInfo, engine_id: int) -> None:
        """A call dispatched to ``engine_id`` finished."""


class ClusterPolicyConfig(StrictConfig):
    """Config of a cluster scheduler; ``policy`` is the tag the YAML uses."""

    policy: str

    def make(self, num_engines: int) -> ClusterPolicy:
        raise NotImplementedError


CLUSTER_POLICIES = Registry("cluster policy", "policy")
#: class decorator: make a cluster policy config available under its ``policy`` tag
register_cluster_policy = CLUSTER_POLICIES.register
