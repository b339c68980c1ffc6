"""Parrot's cluster scheduler as it was before its incremental rewrite (commit 15fffa3 of
``policies/cluster/parrot.py``, verbatim but for the config, imported from there): the
oracle that ``test_parrot_cluster_equivalence`` compares the shipped policy's decisions
with, on random clusters. It builds a private view of every engine on every dispatch and
ranks every engine for every unit."""

from __future__ import annotations

from dataclasses import dataclass, field

from parrotsim.policies.cluster.parrot import ParrotSchedulerConfig
from parrotsim.sim.model.cluster_policy import CallInfo, ClusterPolicy, EngineLoad
from parrotsim.workloads.dag import UNBOUNDED_TOKENS, lower


@dataclass(slots=True)
class _Load:
    """The scheduler's private view of one engine during a dispatch call."""

    index: int
    num: int
    tokens: int
    cap: int
    tokens_cap: int
    bound: int
    latency: int
    #: the engine's prefix keys (the manager's set, read only here)
    prefixes: set[str] = field(default_factory=set)
    #: prefixes of calls placed on the engine during this dispatch call
    placed: set[str] = field(default_factory=set)

    def holds(self, key: str | None) -> bool:
        """Whether the engine holds, or is about to hold, the prefix context ``key``."""
        return key in self.prefixes or key in self.placed


class ReferenceParrotScheduler(ClusterPolicy):
    """Algorithm 1 / the artifact dispatcher, every engine ranked on every dispatch."""

    def __init__(self, cfg: ParrotSchedulerConfig) -> None:
        self.cfg = cfg
        # artifact mode: the thread queue's order (uids), the current instant, the calls pulled
        # to the front at that instant and, per app, the smallest depth dispatched at it
        self._order: list[int] = []
        self._instant: float | None = None
        self._pulled: list[int] = []
        self._dispatched: dict[str, int] = {}

    # ---- per-call facts ------------------------------------------------------------------
    def objective(self, call: CallInfo) -> str | None:
        """The call's objective as the scheduler uses it (None without deduction or in artifact
        mode, whose runs had no deduction: bounds come from hints only)."""
        if not self.cfg.deduction or self.cfg.mode == "artifact":
            return None
        return call.objective

    def call_bound(self, call: CallInfo) -> int:
        """Most requests an engine may hold for ``call`` to run there (lowered objective or
        explicit hint); the manager keeps ``EngineLoad.requests_bound`` as the minimum of these
        over an engine's calls."""
        cfg = self.cfg
        return lower(self.objective(call), call.max_requests, cfg.latency_max_requests,
                     cfg.latency_max_tokens)[0]

    # ---- dispatch ------------------------------------------------------------------------
    def dispatch(self, queue: list[CallInfo], engines: list[EngineLoad],
                 now: float) -> list[tuple[CallInfo, int]]:
        cfg = self.cfg
        cap_tokens = cfg.tokens_capacity if cfg.tokens_capacity is not None else UNBOUNDED_TOKENS
        loads = [_Load(i, e.num_requests, e.reserved_tokens,
                       min(e.max_requests, cfg.max_requests_per_engine),
                       min(e.tokens_capacity, cap_tokens), e.requests_bound, e.latency_calls,
                       e.prefixes) for i, e in enumerate(engines)]
        out: list[tuple[CallInfo, int]] = []
        if cfg.mode == "artifact":
            order = self._artifact_order(queue, now) if cfg.app_fifo else queue
            for call in order:
                self._place([call], loads, out)
            if cfg.app_fifo:
                self._dispatched_now(order, out)
            return out
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
            self._place(unit, loads, out)
        return out

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

    def _place(self, unit: list[CallInfo], loads: list[_Load],
               out: list[tuple[CallInfo, int]]) -> None:
        """Place ``unit`` on one engine, or split it over several if none takes it whole."""
        while unit:
            best: tuple | None = None
            for load in loads:
                m = self._fit(load, unit)
                if m == 0:
                    continue
                key = self._rank(load, unit[:m], m)
                if best is None or key < best[0]:
                    best = (key, load, m)
            if best is None:
                return
            _, load, m = best
            for c in unit[:m]:
                self._take(load, c)
                out.append((c, load.index))
            unit = unit[m:]

    def _fit(self, load: _Load, unit: list[CallInfo]) -> int:
        """How many leading calls of ``unit`` the engine admits together."""
        m, tokens, bound = 0, load.tokens, load.bound
        for c in unit:
            n = load.num + m + 1
            tokens += c.tokens
            if n > load.cap or tokens > load.tokens_cap:
                break
            if self.cfg.dag_aware:
                bound = min(bound, self.call_bound(c))
                if n > bound:
                    break
            m += 1
        return m

    def _rank(self, load: _Load, part: list[CallInfo], m: int) -> tuple:
        """Sort key of an engine for ``part`` (smaller is better)."""
        cfg = self.cfg
        if cfg.mode == "artifact":
            held = cfg.ctx_aware and load.holds(part[0].shared_prefix)
            if held:
                return (0, load.index)
            locs = load.cap - load.num  # remain_thread_locs: capacity only, never the bound
            return (1, locs if cfg.dag_aware else -locs, load.index)
        slots = (min(load.cap, load.bound) if cfg.dag_aware else load.cap) - load.num
        tier = 0
        if cfg.dag_aware:
            objs = {self.objective(c) for c in part}
            if "latency" in objs:
                budget = min(self.call_bound(c) for c in part if self.objective(c) == "latency")
                within = (load.num + m <= budget and
                          load.tokens + sum(c.tokens for c in part) <= cfg.latency_max_tokens)
                tier = 0 if within else 1
            elif "throughput" in objs:
                tier = 0 if load.latency == 0 else 1
        depth = self._held_depth(load, part[0]) if cfg.ctx_aware else 0
        if depth > 0:
            return (tier, -depth, -m, 0, load.index)
        if cfg.dag_aware:
            return (tier, 0, -m, slots, load.tokens_cap - load.tokens, load.index)
        return (tier, 0, -m, -slots, load.index)

    @staticmethod
    def _held_depth(load: _Load, call: CallInfo) -> int:
        """Tokens of the longest prefix of ``call`` whose context the engine holds."""
        best = 0
        for key, n in zip(call.prefix_keys, call.prefix_lens, strict=False):
            if load.holds(key):
                best = max(best, n)
        if best == 0 and load.holds(call.shared_prefix):
            best = 1
        return best

    def _take(self, load: _Load, call: CallInfo) -> None:
        load.num += 1
        load.tokens += call.tokens
        if self.cfg.dag_aware:
            load.bound = min(load.bound, self.call_bound(call))
        if self.objective(call) == "latency":
            load.latency += 1
        if call.shared_prefix is not None:
            load.placed.add(call.shared_prefix)
