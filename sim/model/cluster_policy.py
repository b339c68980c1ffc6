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
           "HeldPrefixes", "Objective", "PrefixIndex", "register_cluster_policy"]

#: prefix key -> indices of the engines holding its context
PrefixIndex = dict[str, set[int]]


class HeldPrefixes(set):
    """The prefix keys whose context one engine holds: a set that, once given an ``index``
    (:meth:`attach`), keeps it current, so a scheduler finds the engines holding a prefix
    without looking at every engine. Only its mutating methods are overridden (membership and
    iteration are the plain set's); every one of them goes through :meth:`add` or
    :meth:`discard`."""

    def __init__(self, keys=()) -> None:
        super().__init__(keys)
        self.index: PrefixIndex | None = None
        self.engine = -1

    def attach(self, index: PrefixIndex, engine: int) -> None:
        """Keep ``index`` current for the engine at position ``engine`` of the cluster, starting
        with the keys held now."""
        self.index, self.engine = index, engine
        for key in self:
            index.setdefault(key, set()).add(engine)

    def add(self, key: str) -> None:
        if key not in self:
            super().add(key)
            if self.index is not None:
                self.index.setdefault(key, set()).add(self.engine)

    def discard(self, key: str) -> None:
        if key in self:
            super().discard(key)
            if self.index is not None:
                holders = self.index[key]
                holders.discard(self.engine)
                if not holders:
                    del self.index[key]

    def remove(self, key: str) -> None:
        if key not in self:
            raise KeyError(key)
        self.discard(key)

    def pop(self) -> str:
        if not self:
            raise KeyError("pop from an empty set")
        key = next(iter(self))
        self.discard(key)
        return key

    def clear(self) -> None:
        for key in list(self):
            self.discard(key)

    def update(self, *others) -> None:
        for other in others:
            for key in other:
                self.add(key)

    def difference_update(self, *others) -> None:
        for other in others:
            for key in list(other):
                self.discard(key)

    def intersection_update(self, *others) -> None:
        keep = set(self).intersection(*others)
        self.difference_update([k for k in self if k not in keep])

    def symmetric_difference_update(self, other) -> None:
        for key in set(other):
            if key in self:
                self.discard(key)
            else:
                self.add(key)

    def __ior__(self, other):
        self.update(other)
        return self

    def __isub__(self, other):
        self.difference_update(other)
        return self

    def __iand__(self, other):
        self.intersection_update(other)
        return self

    def __ixor__(self, other):
        self.symmetric_difference_update(other)
        return self


@dataclass(slots=True)
class EngineLoad:
    """One engine as the manager knows it.

    ``num_requests``/``reserved_tokens`` count dispatched, unfinished calls (tokens = prompt +
    output of each); ``max_requests`` and ``tokens_capacity`` are the engine's admission limits
    (Parrot's ``threads_capacity``/``tokens_capacity``); ``requests_bound`` is the smallest
    ``max_requests`` hint among its calls; ``prefixes`` the prefix keys whose context it holds
    (a :class:`HeldPrefixes` unless replaced by a plain set); ``latency_calls`` how many of its
    calls are latency-sensitive.
    """

    engine_id: int
    num_requests: int = 0
    reserved_tokens: int = 0
    max_requests: int = 1 << 30
    tokens_capacity: int = 1 << 60
    requests_bound: int = 1 << 30
    prefixes: set[str] = field(default_factory=HeldPrefixes)
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
