"""The engines as Parrot's cluster scheduler sees them while it dispatches.

The manager keeps each engine's :class:`~parrotsim.sim.model.cluster_policy.EngineLoad` current
on events (a call dispatched, finished or rejected). One dispatch places calls one after another,
each placement counting for the next decision before the manager applies them all.
:class:`ClusterLoads` is the manager's loads plus the placements of the dispatch in progress
(kept for the engines they touch only: nothing is copied per engine), with two indexes that
spare the scheduler a look at every engine:

* the engines holding a prefix context, by prefix key (PrefixHash): the index that the engines'
  :class:`~parrotsim.sim.model.cluster_policy.HeldPrefixes` keep current, plus the shared
  prefixes of the calls placed by this dispatch;
* a heap of ``(-free request slots, engine index)``: the engine with the most free slots, ties
  to the first engine, in O(log engines). The heap is lazy: an engine's pushed count is never
  below its true count (its slots only fall between two pushes, by placements, until a finish
  reported through :meth:`ClusterLoads.freed` pushes the new count), and a top entry that no
  longer matches its engine is dropped and, if it was the engine's latest, pushed again.

Contract: between dispatches the loads change only by the scheduler's own decisions (the
manager applies them) and by finishes and rejections reported through :meth:`freed`; engines
whose ``prefixes`` are plain sets (hand-built tests) are searched by looking at each.
"""

from __future__ import annotations

import heapq

from parrotsim.sim.model.cluster_policy import CallInfo, EngineLoad, HeldPrefixes, PrefixIndex

_NO_BOUND = 1 << 62


class ClusterLoads:
    """Per-engine load of a dispatch in progress: requests, reserved tokens (prompt + output),
    request bound, latency-sensitive calls, prefix contexts; limits in requests and tokens."""

    def __init__(self, engines: list[EngineLoad], max_requests: int,
                 tokens_capacity: int) -> None:
        self.engines = engines
        self.max_requests = max_requests  # the scheduler's own cap per engine
        self.tokens_capacity = tokens_capacity
        self.index = self._attach(engines)
        # placements of the dispatch in progress, by engine index
        self.calls: dict[int, int] = {}
        self.tokens: dict[int, int] = {}
        self.bounds: dict[int, int] = {}
        self.latency: dict[int, int] = {}
        self.placed: dict[int, set[str]] = {}  # engine -> shared prefixes placed on it
        self.placed_on: dict[str, set[int]] = {}  # shared prefix -> engines it was placed on
        self._pushed = [self.free_slots(i) for i in range(len(engines))]
        self._heap = [(-s, i) for i, s in enumerate(self._pushed)]
        heapq.heapify(self._heap)

    @staticmethod
    def _attach(engines: list[EngineLoad]) -> PrefixIndex | None:
        """The prefix index the engines' held-prefix sets keep (attached now unless they all
        keep one already); None if some engine's set is a plain set."""
        sets = [e.prefixes for e in engines]
        if not all(isinstance(s, HeldPrefixes) for s in sets):
            return None
        index = sets[0].index if sets else {}
        if index is None or any(s.index is not index or s.engine != i
                                for i, s in enumerate(sets)):
            index = {}
            for i, s in enumerate(sets):
                s.attach(index, i)
        return index

    def end(self) -> None:
        """The dispatch is over: its placements are the manager's to apply."""
        if self.calls:
            self.calls.clear()
            self.tokens.clear()
            self.bounds.clear()
            self.latency.clear()
        if self.placed:
            self.placed.clear()
            self.placed_on.clear()

    # ---- one engine ----------------------------------------------------------------------
    def requests(self, i: int) -> int:
        return self.engines[i].num_requests + self.calls.get(i, 0)

    def capacity(self, i: int) -> int:
        """Most requests the engine may hold."""
        return min(self.engines[i].max_requests, self.max_requests)

    def free_slots(self, i: int) -> int:
        e = self.engines[i]
        return min(e.max_requests, self.max_requests) - e.num_requests - self.calls.get(i, 0)

    def reserved(self, i: int) -> int:
        return self.engines[i].reserved_tokens + self.tokens.get(i, 0)

    def token_capacity(self, i: int) -> int:
        return min(self.engines[i].tokens_capacity, self.tokens_capacity)

    def bound(self, i: int) -> int:
        """The smallest request bound of the engine's calls, placed ones included."""
        return min(self.engines[i].requests_bound, self.bounds.get(i, _NO_BOUND))

    def latency_calls(self, i: int) -> int:
        return self.engines[i].latency_calls + self.latency.get(i, 0)

    def holds(self, i: int, key: str | None) -> bool:
        """Whether engine ``i`` holds, or is about to hold, the prefix context ``key``."""
        if key in self.engines[i].prefixes:
            return True
        placed = self.placed.get(i)
        return placed is not None and key in placed

    def held_depth(self, i: int, call: CallInfo) -> int:
        """Tokens of the longest prefix of ``call`` whose context engine ``i`` holds or is
        about to hold; 1 if it holds only the call's shared prefix, 0 if neither."""
        held = self.engines[i].prefixes
        placed = self.placed.get(i)
        best = 0
        for key, n in zip(call.prefix_keys, call.prefix_lens, strict=False):
            if n > best and (key in held or placed is not None and key in placed):
                best = n
        if best == 0:
            key = call.shared_prefix
            if key in held or placed is not None and key in placed:
                best = 1
        return best

    def admits(self, i: int, unit: list[CallInfo]) -> int:
        """How many leading calls of ``unit`` engine ``i`` admits together within its request
        and token capacities."""
        e = self.engines[i]
        room = (min(e.max_requests, self.max_requests) - e.num_requests
                - self.calls.get(i, 0))
        tokens_room = (min(e.tokens_capacity, self.tokens_capacity) - e.reserved_tokens
                       - self.tokens.get(i, 0))
        m = 0
        for c in unit:
            tokens_room -= c.tokens
            if m >= room or tokens_room < 0:
                break
            m += 1
        return m

    # ---- indexes -------------------------------------------------------------------------
    def holder_depths(self, call: CallInfo, shared_only: bool = False) -> dict[int, int]:
        """The engines holding (or about to hold) a prefix context of ``call``, each with its
        :meth:`held_depth` (with ``shared_only``: the engines holding the call's shared prefix,
        each at depth 1). Found through the prefix index, the holders of the call's last
        prefix keys first; without an index every engine is looked at, in order."""
        shared = call.shared_prefix
        if self.index is None:
            if shared_only:
                return {} if shared is None else \
                    {i: 1 for i in range(len(self.engines)) if self.holds(i, shared)}
            out = {i: self.held_depth(i, call) for i in range(len(self.engines))}
            return {i: d for i, d in out.items() if d > 0}
        sources = (self.index, self.placed_on)
        depths: dict[int, int] = {}
        if not shared_only:
            for key, n in reversed(list(zip(call.prefix_keys, call.prefix_lens, strict=False))):
                if n <= 0:
                    continue
                for source in sources:
                    for i in source.get(key, ()):
                        if depths.get(i, 0) < n:
                            depths[i] = n
        if shared is not None:
            for source in sources:
                for i in source.get(shared, ()):
                    if i not in depths:
                        depths[i] = 1
        return depths

    def most_free(self) -> tuple[int, int] | None:
        """(engine, free slots) of the engine with the most free request slots, the first such
        engine on a tie; None without engines."""
        heap, pushed = self._heap, self._pushed
        while heap:
            neg, i = heap[0]
            free = self.free_slots(i)
            if -neg == free:
                return i, free
            heapq.heappop(heap)
            if -neg == pushed[i]:  # the engine's latest entry: replace it
                pushed[i] = free
                heapq.heappush(heap, (-free, i))
        return None

    # ---- events --------------------------------------------------------------------------
    def take(self, i: int, call: CallInfo, bound: int | None, latency: bool) -> None:
        """Count ``call`` on engine ``i`` for the rest of this dispatch (``bound``: the request
        bound it adds, None for none)."""
        self.calls[i] = self.calls.get(i, 0) + 1
        self.tokens[i] = self.tokens.get(i, 0) + call.tokens
        if bound is not None:
            self.bounds[i] = min(self.bounds.get(i, _NO_BOUND), bound)
        if latency:
            self.latency[i] = self.latency.get(i, 0) + 1
        key = call.shared_prefix
        if key is not None:
            self.placed.setdefault(i, set()).add(key)
            self.placed_on.setdefault(key, set()).add(i)

    def freed(self, i: int) -> None:
        """A call left engine ``i`` (finished or rejected); the manager has counted it."""
        free = self.free_slots(i)
        if free > self._pushed[i]:
            self._pushed[i] = free
            heap = self._heap
            heapq.heappush(heap, (-free, i))
            if len(heap) > 2 * len(self._pushed) + 64:  # drop the stale entries
                self._heap = [(-s, j) for j, s in enumerate(self._pushed)]
                heapq.heapify(self._heap)
