"""What Parrot's engine looks at when an iteration would run nothing for want of KV blocks.

The scheduler then runs the oldest ready job alone, preempting (by recompute) the newest
sequences holding KV until it fits (:meth:`~parrotsim.policies.engine.parrot.ParrotEnginePolicy._unstick`).
Under a KV shortage (Fig 17's GPTs at 256 engines: ~700 such iterations, ~100 running jobs and
~60 waiting) building both lists and sorting every KV holder to preempt one or two was most of
that iteration's cost. Here the running jobs, already in running order when the scheduler gets
stuck, are read from their ends; only the waiting jobs are filtered and sorted.

Both helpers give what ``min`` over the ready jobs of ``(*running, *waiting)`` and popping the
end of that list of KV holders sorted by ``key`` give, ties included (``min`` keeps the first
of equal keys, a stable sort keeps list order among them); ``key`` is the running order.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from parrotsim.sim.model.sequence import Sequence


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
