"""Parrot's application-centric cluster scheduler (Algorithm 1 + FindEngine), tag ``parrot``.

``mode="paper"`` (default) follows the paper (section 5.4, experiments.md 3.1) and HEAD's
``global_scheduler`` (3.3): the queue is sorted topologically (``CallInfo.depth``; with
``app_fifo`` by app arrival rank first, stable); for each call, in order:

1. a call in a task group (``dag_aware`` and ``task_groups``) is placed with all queued members
   of its group on ONE engine;
2. else, with ``ctx_aware``, together with the queued calls sharing its prefix
   (``CallInfo.shared_prefix``);
3. else alone; with ``ctx_aware``, engines already holding its prefix context are preferred.

FindEngine keeps the engines that admit the unit (experiments.md 3.2 ``_get_engine_list``):
``reserved_tokens + tokens <= tokens_capacity``, ``num_requests + k <= max_requests``, and with
``dag_aware`` ``num_requests + k <= min(engine's requests_bound, each call's bound)``, a call's
bound being its lowered objective (``deduction``: latency -> ``latency_max_requests``) or its
explicit hint. With ``dag_aware`` the unit's objective is honoured: a latency-sensitive call goes
to an engine that stays within the latency budget (its bound in requests, ``latency_max_requests``
unless hinted, and ``latency_max_tokens`` tokens) whenever one admits it, so it never joins an engine running a large
throughput batch while another engine fits; throughput work prefers engines holding no
latency-sensitive calls. Among the rest: an engine holding the deepest prefix of the call
(``ctx_aware``, first such engine), else best fit (``dag_aware``: fewest remaining request slots,
then least remaining token capacity), else load balance (most remaining slots). A unit that no
engine takes whole is split: the engine taking the longest leading part gets it, and so on.

``mode="artifact"`` is what the paper's experiments ran (experiments.md 3.2): calls one at a
time in queue order, the same admission filters, then first engine holding the prefix
(``ctx_aware``), else fewest remaining slots (``dag_aware``), else most, the slots being the
engine's ``threads_capacity`` minus its calls (the artifact's ``remain_thread_locs``: the calls'
bounds filter engines but do not rank them, so an engine holding latency-marked calls is not
preferred for its small bound); no task groups, no
shared-prefix sets, no objectives (a call's bound is its hint, default unbounded), no
latency/throughput preference. The queue order is the artifact's thread queue, which the
scheduler keeps itself: calls join at the back in arrival order; with ``app_fifo`` a dispatched
call "pulls" its ready successors to the front (the artifact gave them priority 1 and re-sorted
the queue, priority descending, stable: depth-first per app). A call is taken as a ready
successor when it arrives at the instant the scheduler dispatched a call of its app at a smaller
depth (the Parrot client's default ``readiness: dispatched`` submits a call at the instant its
last producer is dispatched); calls pulled at one instant keep their arrival order, ahead of the
calls pulled earlier. (The artifact's ``CallInfo`` carries no DAG edges, so a same-app call
deeper in the DAG that becomes ready at that instant for another reason is pulled too.)

A dispatch reads the manager's loads plus its own placements so far
(:class:`~parrotsim.policies.cluster.parrot_loads.ClusterLoads`): engines holding a prefix are
looked up by key and, without ``dag_aware``, the load balance's engine is the top of a heap of
free slots, so a dispatch costs O(calls x (holders + log engines)); with ``dag_aware`` every
engine is ranked. The manager applies the real accounting, tells the scheduler of every finish
or rejection (``on_finish``), and should set an engine's ``requests_bound`` from
:meth:`ParrotScheduler.call_bound`.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from parrotsim.policies.cluster.parrot_loads import ClusterLoads
from parrotsim.sim.model.cluster_policy import (
    CallInfo,
    ClusterPolicy,
    ClusterPolicyConfig,
    EngineLoad,
    register_cluster_policy,
)
from parrotsim.workloads.dag import UNBOUNDED_TOKENS, lower


@register_cluster_policy
class ParrotSchedulerConfig(ClusterPolicyConfig):
    """Switches of Parrot's manager (artifact ``DispatcherConfig`` defaults: all off)."""

    policy: Literal["parrot"] = "parrot"
    mode: Literal["paper", "artifact"] = "paper"
    dag_aware: bool = False
    app_fifo: bool = False
    ctx_aware: bool = False
    deduction: bool = True
    task_groups: bool = True
    max_requests_per_engine: int = Field(default=256, gt=0)
    #: the artifact's per-engine token budget (``EngineConfig.tokens_capacity``, 262,144 unless
    #: an engine's JSON set it: Figs 12a/b, 17 and 18 did not); None: unbounded, as at HEAD
    tokens_capacity: int | None = Field(default=262144, gt=0)
    latency_max_requests: int = Field(default=4, gt=0)
    latency_max_tokens: int = Field(default=4096, gt=0)

    def make(self, num_engines: int) -> ParrotScheduler:
        return ParrotScheduler(self)


class ParrotScheduler(ClusterPolicy):
    """Algorithm 1 / the artifact dispatcher (see module docstring)."""

    def __init__(self, cfg: ParrotSchedulerConfig) -> None:
        self.cfg = cfg
        # artifact mode: the thread queue's order (uids), the current instant, the calls pulled
        # to the front at that instant and, per app, the smallest depth dispatched at it
        self._order: list[int] = []
        self._instant: float | None = None
        self._pulled: list[int] = []
        self._dispatched: dict[str, int] = {}
        self._loads: ClusterLoads | None = None  # the loads of the last dispatch's engines
        # per-call facts depend on the config, fixed once the scheduler is made
        self._deduces = cfg.deduction and cfg.mode != "artifact"
        self._bounds: dict[tuple[str | None, int | None], int] = {}  # (objective, hint) -> bound

    # ---- per-call facts ------------------------------------------------------------------
    def objective(self, call: CallInfo) -> str | None:
        """The call's objective as the scheduler uses it (None without deduction or in artifact
        mode, whose runs had no deduction: bounds come from hints only)."""
        return call.objective if self._deduces else None

    def call_bound(self, call: CallInfo) -> int:
        """Most requests an engine may hold for ``call`` to run there (lowered objective or
        explicit hint); the manager keeps ``EngineLoad.requests_bound`` as the minimum of these
        over an engine's calls. Remembered per (objective, hint)."""
        key = (call.objective, call.max_requests)
        bound = self._bounds.get(key)
        if bound is None:
            cfg = self.cfg
            bound = self._bounds[key] = lower(self.objective(call), call.max_requests,
                                              cfg.latency_max_requests,
                                              cfg.latency_max_tokens)[0]
        return bound

    # ---- dispatch ------------------------------------------------------------------------
    def dispatch(self, queue: list[CallInfo], engines: list[EngineLoad],
                 now: float) -> list[tuple[CallInfo, int]]:
        loads = self._loads
        if loads is None or loads.engines is not engines:
            cfg = self.cfg
            loads = self._loads = ClusterLoads(
                engines, cfg.max_requests_per_engine,
                cfg.tokens_capacity if cfg.tokens_capacity is not None else UNBOUNDED_TOKENS)
        out: list[tuple[CallInfo, int]] = []
        try:
            self._dispatch(queue, loads, now, out)
        finally:
            loads.end()
        return out

    def on_finish(self, call: CallInfo, engine_id: int) -> None:
        if self._loads is not None:
            self._loads.freed(engine_id)

    def _dispatch(self, queue: list[CallInfo], loads: ClusterLoads, now: float,
                  out: list[tuple[CallInfo, int]]) -> None:
        cfg = self.cfg
        if cfg.mode == "artifact":
            order = self._artifact_order(queue, now) if cfg.app_fifo else queue
            counted = len(order) > 1
            for call in order:
                if not self._place([call], loads, out, counted):
                    break
            if cfg.app_fifo:
                self._dispatched_now(order, out)
            return
        if len(queue) == 1:  # most consults (one arrival): the call is its own unit
            self._place(queue, loads, out, counted=False)
            return
        if cfg.app_fifo:
            order = sorted(queue, key=lambda c: (c.app_seq, c.depth))
        else:
            order = sorted(queue, key=lambda c: c.depth)
        groups: dict[str, list[CallInfo]] = {}
        sharers: dict[str, list[CallInfo]] = {}
        for c in order:
            if c.task_group is not None:
                groups.setdefault(c.task_group, []).append(c)
            if c.shared_prefix is not None:
                sharers.setdefault(c.shared_prefix, []).append(c)
        done: set[int] = set()
        for call in order:
            if call.uid in done:
                continue
            if cfg.dag_aware and cfg.task_groups and call.task_group is not None:
                unit = groups[call.task_group]
            elif cfg.ctx_aware and call.shared_prefix is not None:
                unit = sharers[call.shared_prefix]
            else:
                unit = [call]
            unit = [c for c in unit if c.uid not in done]
            done.update(c.uid for c in unit)
            if not self._place(unit, loads, out):
                break

    def _artifact_order(self, queue: list[CallInfo], now: float) -> list[CallInfo]:
        """The artifact's thread-queue order of ``queue`` with App-FIFO promotion: calls pulled
        to the front at this instant (in arrival order), then the queue as it was, then the
        other new arrivals (see module docstring)."""
        if now != self._instant:
            self._instant, self._pulled, self._dispatched = now, [], {}
        by_uid = {c.uid: c for c in queue}
        known = set(self._order)
        for c in queue:
            if c.uid not in known:
                depth = self._dispatched.get(c.app_id)
                if depth is not None and depth < c.depth:
                    self._pulled.append(c.uid)
                else:
                    self._order.append(c.uid)
        pulled = set(self._pulled)
        self._pulled = [u for u in self._pulled if u in by_uid]
        rest = [u for u in self._order if u in by_uid and u not in pulled]
        self._order = self._pulled + rest
        return [by_uid[u] for u in self._order]

    def _dispatched_now(self, order: list[CallInfo], out: list[tuple[CallInfo, int]]) -> None:
        """Remember this consult's decisions: their calls leave the queue, and their apps may
        pull successors that arrive at this instant."""
        placed = {c.uid for c, _ in out}
        for c, _ in out:
            self._dispatched[c.app_id] = min(self._dispatched.get(c.app_id, c.depth), c.depth)
        self._pulled = [u for u in self._pulled if u not in placed]
        self._order = [c.uid for c in order if c.uid not in placed]

    # ---- FindEngine ----------------------------------------------------------------------
    def _place(self, unit: list[CallInfo], loads: ClusterLoads,
               out: list[tuple[CallInfo, int]], counted: bool = True) -> bool:
        """Place ``unit`` on one engine, or split it over several if none takes it whole;
        False once no engine has a free request slot left (nothing more can be placed).
        ``counted``: the placements count in ``loads`` for the decisions after them (False
        when ``unit`` is a single call and the dispatch's last decision)."""
        cfg = self.cfg
        while unit:
            if cfg.dag_aware:
                found = self._best_of_all(unit, loads)
            else:
                found = self._best_holder(unit, loads) if cfg.ctx_aware else None
                if found is None:
                    top = loads.most_free()
                    if top is None or top[1] <= 0:
                        return False
                    found = self._most_free(unit, loads, *top)
            if found is None:
                return True
            index, m = found
            for c in unit[:m]:
                if counted:
                    loads.take(index, c, self.call_bound(c) if cfg.dag_aware else None,
                               self.objective(c) == "latency")
                out.append((c, index))
            unit = unit[m:]
        return True

    def _fit(self, loads: ClusterLoads, i: int, unit: list[CallInfo]) -> int:
        """How many leading calls of ``unit`` engine ``i`` admits together."""
        if not self.cfg.dag_aware:
            return loads.admits(i, unit)
        num, cap = loads.requests(i), loads.capacity(i)
        tokens, tokens_cap = loads.reserved(i), loads.token_capacity(i)
        bound = loads.bound(i)
        m = 0
        for c in unit:
            n = num + m + 1
            tokens += c.tokens
            if n > cap or tokens > tokens_cap:
                break
            bound = min(bound, self.call_bound(c))
            if n > bound:
                break
            m += 1
        return m

    def _best_holder(self, unit: list[CallInfo], loads: ClusterLoads) -> tuple[int, int] | None:
        """(engine, calls it takes) among the engines holding the context of ``unit``'s first
        call (prefix affinity, without ``dag_aware``), or None if none takes any: the deepest
        prefix, then the longest leading part, then the first engine (paper mode); the first
        engine holding the shared prefix (artifact mode). An engine whose key could not beat
        the best so far even taking the whole unit is not fitted."""
        artifact = self.cfg.mode == "artifact"
        reach = 0 if artifact else -len(unit)  # the best second key term an engine can get
        best: tuple[int, int, int] | None = None  # the best key so far
        best_m = 0  # the calls its engine takes
        for i, depth in loads.holder_depths(unit[0], artifact).items():
            if best is not None and (-depth, reach, i) > best:
                continue
            m = loads.admits(i, unit)
            if m == 0:
                continue
            key = (-depth, 0 if artifact else -m, i)
            if best is None or key < best:
                best, best_m = key, m
        return None if best is None else (best[2], best_m)

    def _most_free(self, unit: list[CallInfo], loads: ClusterLoads, top: int,
                   free: int) -> tuple[int, int] | None:
        """Load balance (without ``dag_aware``): the engine taking the longest leading part of
        ``unit``, then the one with the most free slots, then the first. The engine with the
        most free slots (``top``, ``free`` of them) takes min(len(unit), free) calls unless its
        tokens run out first, and then no engine takes more; only then is every engine
        ranked."""
        m = self._fit(loads, top, unit)
        if m == min(len(unit), free):
            return top, m
        best: tuple[int, int, int] | None = None
        for i in range(len(loads.engines)):
            m = self._fit(loads, i, unit)
            if m == 0:
                continue
            key = (-m, -loads.free_slots(i), i)
            if best is None or key < best:
                best = key
        return None if best is None else (best[2], -best[0])

    def _best_of_all(self, unit: list[CallInfo], loads: ClusterLoads) -> tuple[int, int] | None:
        """(engine, calls it takes) by :meth:`_rank` over every engine (``dag_aware``)."""
        best: tuple | None = None
        for i in range(len(loads.engines)):
            m = self._fit(loads, i, unit)
            if m == 0:
                continue
            key = self._rank(loads, i, unit[:m], m)
            if best is None or key < best[0]:
                best = (key, i, m)
        return None if best is None else (best[1], best[2])

    def _rank(self, loads: ClusterLoads, i: int, part: list[CallInfo], m: int) -> tuple:
        """Sort key of engine ``i`` for ``part`` with ``dag_aware`` (smaller is better)."""
        cfg = self.cfg
        num, tokens = loads.requests(i), loads.reserved(i)
        cap = loads.capacity(i)
        if cfg.mode == "artifact":
            if cfg.ctx_aware and loads.holds(i, part[0].shared_prefix):
                return (0, i)
            return (1, cap - num, i)  # remain_thread_locs: capacity only, never the bound
        slots = min(cap, loads.bound(i)) - num
        tier = 0
        objs = {self.objective(c) for c in part}
        if "latency" in objs:
            budget = min(self.call_bound(c) for c in part if self.objective(c) == "latency")
            within = (num + m <= budget and
                      tokens + sum(c.tokens for c in part) <= cfg.latency_max_tokens)
            tier = 0 if within else 1
        elif "throughput" in objs:
            tier = 0 if loads.latency_calls(i) == 0 else 1
        depth = loads.held_depth(i, part[0]) if cfg.ctx_aware else 0
        if depth > 0:
            return (tier, -depth, -m, 0, i)
        return (tier, 0, -m, slots, loads.token_capacity(i) - tokens, i)
