"""What Parrot's engine does when an iteration would run nothing for want of KV blocks.

The scheduler then runs the oldest ready job alone, preempting (by recompute) the newest
sequences holding KV until it fits (:meth:`ParrotUnstick._unstick`), and puts every other
running job back at the head of the waiting queue. Under a KV shortage (Fig 17's GPTs at 256
engines: ~700 such iterations, ~110 running jobs and ~60 waiting) building both lists and
sorting every KV holder to preempt one or two was most of that iteration's cost. Here the
running jobs, already in running order when the scheduler gets stuck, are read from their ends;
only the waiting jobs are filtered and sorted. The two helpers give what ``min`` over the ready
jobs of ``(*running, *waiting)`` and popping the end of that list of KV holders sorted by
``key`` give, ties included (``min`` keeps the first of equal keys, a stable sort keeps list
order among them); ``key`` is the running order.

Those iterations mostly come right after one that held Generates back for want of a block,
when no block is free and every running job needs one (:meth:`ParrotUnstick._stuck_after_short`):
the full walk would take the held-back jobs back, sort them in and find that none can grow.
That outcome is known from one pass over the running jobs, so the walk is skipped.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from parrotsim.policies.engine.parrot_after_stuck import ParrotAfterStuck
from parrotsim.policies.engine.parrot_order import merge_tail
from parrotsim.sim.model.engine_policy import EngineState
from parrotsim.sim.model.sequence import Batch, Sequence


def _ready(s: Sequence) -> bool:
    """:func:`~parrotsim.policies.engine.parrot_admission.is_ready`, inlined for the scans."""
    if s.ctx is not None:
        return True
    if s.waiting_inputs:
        return False
    return s.prefix_ctx is None or getattr(s.prefix_ctx, "ready", True)


def oldest_ready(running: list[Sequence], waiting: Iterable[Sequence],
                 key: Callable[[Sequence], tuple]) -> Sequence | None:
    """The first ready job of least ``key`` in ``(*running, *waiting)`` (None if none is
    ready), given ``running`` sorted by ``key``: the first ready running job, unless a ready
    waiting job has a smaller key."""
    best = next((s for s in running if _ready(s)), None)
    rest = [s for s in waiting if _ready(s)]
    if rest:
        other = min(rest, key=key)
        if best is None or key(other) < key(best):
            return other
    return best


def newest_holders(running: list[Sequence], waiting: Iterable[Sequence], seq: Sequence,
                   key: Callable[[Sequence], tuple]) -> Iterator[Sequence]:
    """The jobs other than ``seq`` holding KV now (``ctx`` set) in the order a stable sort of
    ``(*running, *waiting)``'s holders by ``key`` pops them from the end (largest key first;
    on equal keys the waiting job, then the later one), given ``running`` sorted by ``key``.
    Only the waiting holders are sorted; the running ones are merged in from their end."""
    held = [s for s in running if s.ctx is not None and s is not seq]
    others = [s for s in waiting if s.ctx is not None and s is not seq]
    others.sort(key=key)
    return _merge_from_end(held, others, key)


def _merge_from_end(held: list[Sequence], others: list[Sequence],
                    key: Callable[[Sequence], tuple]) -> Iterator[Sequence]:
    i, j = len(held) - 1, len(others) - 1
    while i >= 0 or j >= 0:
        if j >= 0 and (i < 0 or not key(others[j]) < key(held[i])):
            yield others[j]
            j -= 1
        else:
            yield held[i]
            i -= 1


class ParrotUnstick(ParrotAfterStuck):
    """The stuck iteration of Parrot's engine scheduler (see module docstring)."""

    def _stuck_after_short(self, state: EngineState, head: list[Sequence],
                           key: Callable[[Sequence], tuple], limit: int | None,
                           head_tokens: int) -> Batch | None:
        """The iteration after one that held back ``head`` (running order; the queue starts
        with it reversed) when no block is free: if every running job needs a block too and
        ``limit`` holds none back, the full walk would admit ``head`` alone (the caller found
        that), sort it in, find every job short of a block and get stuck; this does the same
        without growing each job. None (nothing changed) otherwise."""
        bs = state.kv.block_size
        total = head_tokens
        for s in state.running:
            ctx = s.ctx
            if ctx is None or -(-(ctx.tokens + 1) // bs) - ctx.blocks <= 0:
                return None  # it would grow: not stuck
            total += s.cached_len + ctx.tokens
        if limit is not None and total > limit:
            return None  # the walk would hold jobs back
        waiting, running = state.waiting, state.running
        for _ in range(len(head)):
            waiting.popleft()
        before = len(running)
        running.extend(reversed(head))  # the admitted jobs, in queue order
        if self._in_order:  # running was in running order: place only the admitted jobs
            merge_tail(running, before, key)
        else:
            running.sort(key=key)
        self.memory_stalls += 1  # every job short of a block
        self._unstable = True
        kv = state.kv
        if kv.used_blocks > kv.peak_blocks:
            kv.peak_blocks = kv.used_blocks
        return self._stuck_batch(state, key, {}, [])

    def _stuck_batch(self, state: EngineState, key: Callable[[Sequence], tuple],
                     fill_n: dict[int, int], held: list[Sequence]) -> Batch:
        """The batch of a walk that ran nothing (``running`` in running order, ``held``
        held back by ``max_total_tokens``): the oldest ready job alone, the rest back at the
        head of the queue one by one, as the artifact preempts."""
        prefills: list[tuple[Sequence, int]] = []
        decodes: list[Sequence] = []
        oldest = oldest_ready(state.running, state.waiting, key)
        if oldest is not None:
            self._unstable = True
            prefills, decodes = self._unstick(state, oldest, fill_n)
        self._in_order = False  # _unstick may have appended the job it ran
        running = state.running
        if not held and len(prefills) + len(decodes) == 1:  # one job ran, alone
            one = prefills[0][0] if prefills else decodes[0]
            i = running.index(one)  # sequences compare by identity
            back = running[:i] + running[i + 1:]
            state.running = [one]
            self._in_order = True  # one job is in order
            if self.cfg.scheduler != "tgi":
                self._record_stuck_back(back)
        else:
            ran = {s for s, _ in prefills}.union(decodes)
            back = [s for s in running if s not in ran]
            state.running = [s for s in running if s in ran]
        state.waiting.extendleft(back)
        self._held = {s.uid for s in held}
        return Batch(prefills=prefills, decodes=decodes)

    def _unstick(self, state: EngineState, seq: Sequence, fill_n: dict[int, int]
                 ) -> tuple[list[tuple[Sequence, int]], list[Sequence]]:
        """Preempt the newest sequences holding KV (by recompute) until the oldest job ``seq``
        fits, then run it alone; returns (prefills, decodes), empty if it never fits.
        ``running`` is in running order (the walk just sorted it)."""
        kv = state.kv
        n = self._fill_tokens(seq) if seq.to_fill > 0 else 0
        victims = newest_holders(state.running, state.waiting, seq, self._key)  # in order

        def fits() -> bool:
            if n:
                return self._fill_blocks(state, seq, n) <= kv.free_blocks
            return kv.free_blocks >= 1 if seq.ctx is None else kv.can_grow(seq.ctx, 1)

        if not fits():
            self.memory_stalls += 1
        while not fits():
            v = next(victims, None)
            if v is None:
                break
            v.preempt(kv)
            fill_n.pop(v.uid, None)
        if not fits():
            return [], []
        if seq in state.waiting:
            state.waiting.remove(seq)
            state.running.append(seq)
        if n:
            seq.allocate(kv, n)
            fill_n[seq.uid] = n
            return [(seq, n)], []
        seq.allocate(kv, 1)
        fill_n.pop(seq.uid, None)
        return [], [seq]
