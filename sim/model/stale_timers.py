"""Replaced engine timers taken off SimPy's event queue in batches.

An engine sleeps through a fast-forwarded decode stretch on one timeout; an arrival that cuts
the stretch short schedules an earlier timeout and leaves the old one on the queue with no
callbacks. On a big cluster such stale timeouts are most of the queue (62 % of ~3,100 entries
with 1,024 engines at 1,600 req/s), and every one is popped in its turn, which costs the pop
itself and makes every other push and pop walk a deeper heap.

:class:`StaleTimers` marks a replaced timeout (its callbacks become :data:`STALE`, an empty
sequence: popping it still does nothing) and, once the marked ones could be half the queue,
rebuilds the queue without them (a filter and a heapify, O(queue) per half-queue of
replacements: O(1) amortized). The order of the other events does not change: SimPy pops by
(time, priority, event id), which is unique. Nothing else can tell the difference but the clock
of a run that ends by running out of events (the last event popped sets it):
:meth:`StaleTimers.settle` moves it to the latest removed timeout's time when that is later.

Only SimPy's plain simulated clock is compacted; on any other environment (the replay's wall
clock) a replaced timeout keeps its place and fires nothing, as before.
"""

from __future__ import annotations

from heapq import heapify
from weakref import WeakKeyDictionary

import simpy


class _Stale(tuple):
    """The callbacks of a replaced timeout: empty, and told apart from every other event's."""

    __slots__ = ()


#: the callbacks a replaced timeout holds until it is popped or removed
STALE = _Stale()


class StaleTimers:
    """The replaced timeouts of one environment (shared by its engines; see module docstring)."""

    __slots__ = ("env", "compacts", "marked", "latest", "__weakref__")

    def __init__(self, env: simpy.Environment) -> None:
        self.env = env
        self.compacts = type(env) is simpy.Environment
        self.marked = 0  # timeouts marked since the last rebuild (some popped since)
        self.latest = float("-inf")  # the latest time of a removed timeout

    def drop(self, timer: simpy.Timeout) -> None:
        """``timer`` will not be waited for: it fires nothing (and is removed in a batch)."""
        timer.callbacks = STALE
        if not self.compacts:
            return
        self.marked += 1
        if 2 * self.marked > len(self.env._queue) + 64:
            self.compact()

    def compact(self) -> None:
        """Rebuild the queue without the marked timeouts still on it."""
        queue = self.env._queue
        kept = [entry for entry in queue if entry[3].callbacks is not STALE]
        if len(kept) < len(queue):
            self.latest = max(self.latest, max(entry[0] for entry in queue
                                               if entry[3].callbacks is STALE))
            heapify(kept)
            queue[:] = kept
        self.marked = 0

    def settle(self) -> None:
        """After a run that ran out of events: the clock the removed timeouts would have left
        (the latest event's time)."""
        env = self.env
        if not env._queue and self.latest > env._now:
            env._now = self.latest


_BY_ENV: WeakKeyDictionary = WeakKeyDictionary()


def stale_timers(env: simpy.Environment) -> StaleTimers:
    """The :class:`StaleTimers` of ``env`` (made on first use)."""
    timers = _BY_ENV.get(env)
    if timers is None:
        timers = _BY_ENV[env] = StaleTimers(env)
    return timers
