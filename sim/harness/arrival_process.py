"""Lazy arrivals: each app of a stream is made and handed to its client when it arrives.

Starting every app before the run (the client's ``start`` at time 0, as a list of apps is run)
puts each app's first events on SimPy's queue up front and keeps every app object for the whole
run. An :class:`ArrivalProcess` instead keeps one pending arrival on the queue: when app ``i``
arrives (at exactly ``arrivals[i]`` s), it is made from the stream, started, and app ``i + 1``'s
arrival is queued.

The run is event for event the one the up-front start gives. SimPy orders its queue by (time,
priority, event id), the id counting up as events are scheduled; up front, the events ``start``
schedules get the lowest ids of the run, in app order. Here ``start`` runs with the environment's
id counter swapped for a reserved counter of negative ids, so its events keep that rank: after
no other event of equal time and priority, in app order. Times are equal too: the arrival fires
at the app's arrival time itself (queued at that absolute time, not as now plus a delay), so a
client's ``arrival - now + delay`` sums round as they did at time 0. Random draws keep their
order because the apps start in stream order, which is arrival order. Events queued before the
stream begins (apps started up front ahead of it) are renumbered below the reserved ids, in their
order, so they keep their rank ahead of the stream's (:meth:`ArrivalProcess.begin`).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from heapq import heapify, heappush

import simpy
from simpy.core import NORMAL

from parrotsim.workloads.app import App
from parrotsim.workloads.app_stream import SingleCallApps

#: first reserved event id: below every id an environment hands out (they start at 0)
RESERVED_FROM = -(1 << 62)


def can_start_lazily(env: simpy.Environment) -> bool:
    """Whether apps may be started lazily on ``env``: a plain simulated clock (not the replay's
    wall clock) on which nothing of NORMAL priority is queued yet."""
    return type(env) is simpy.Environment and all(
        priority != NORMAL for _, priority, _, _ in env._queue)


class ArrivalProcess:
    """Starts the apps of ``apps`` in order, each at its arrival time, through ``start``."""

    def __init__(self, env: simpy.Environment, apps: SingleCallApps,
                 start: Callable[[App], None]) -> None:
        self.env = env
        self.apps = apps
        self.start = start
        self.arrivals = apps.arrivals  # float64 array; float() of each, as App.arrival holds
        self.reserved = itertools.count(RESERVED_FROM)
        self.next = 0
        self.markers = 0  # arrival events queued (not events of the up-front run)
        # one event for every arrival: it goes back on the queue once it fired
        self._event = simpy.Event(env)
        self._event._ok = True
        self._event._value = None
        self._callbacks = [self._arrive]  # never changed: shared by every firing

    def begin(self) -> None:
        """Queue the first arrival (call where the up-front run would start the stream's apps:
        after the apps started before it, an ``AppsThenStream``'s front).

        The events already queued (those apps' first events) had ids below the stream's in
        the up-front run; here the stream's take reserved ids, so the queued ones are given
        ids below the reserved range, in their order: they keep their rank ahead of the
        stream's at equal time and priority."""
        queue = self.env._queue
        if queue:
            queued = sorted(queue, key=lambda item: item[2])
            below = RESERVED_FROM - len(queued)
            queue[:] = [(t, p, below + rank, e) for rank, (t, p, _, e) in enumerate(queued)]
            heapify(queue)
        self._queue_next()

    def client_events(self) -> int:
        """Events the clients' ``start`` scheduled (they took reserved ids, not the
        environment's; with the environment's count, the events of the up-front run). Call
        once, after the run."""
        return next(self.reserved) - RESERVED_FROM - self.markers

    def _queue_next(self) -> None:
        if self.next == len(self.arrivals):
            return
        event = self._event
        if event.callbacks:  # still queued (begin called twice): a fresh one
            event = self._event = simpy.Event(self.env)
            event._ok = True
            event._value = None
        event.callbacks = self._callbacks
        self.markers += 1
        heappush(self.env._queue,
                 (float(self.arrivals[self.next]), NORMAL, next(self.reserved), event))

    def _arrive(self, _event: simpy.Event) -> None:
        env = self.env
        app = self.apps[self.next]
        self.next += 1
        ids, env._eid = env._eid, self.reserved
        try:
            self.start(app)
        finally:
            env._eid = ids
        self._queue_next()
