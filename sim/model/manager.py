"""The service's manager: queues ready calls and asks the cluster policy where to run them.

The policy is consulted on events only: a call arrives (or becomes ready), a call finishes, or
(for policies that model one, like FastChat's controller) a worker heartbeat arrives; the
heartbeats stop once nothing else is left to happen. The
manager keeps each engine's :class:`~parrotsim.sim.model.cluster_policy.EngineLoad` (its own dispatch
accounting), turns each decision into a :class:`~parrotsim.sim.model.sequence.Sequence` submitted to the chosen
engine, and tells the call's owner when the engine has produced the whole output.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import simpy

from parrotsim.sim.model.cluster_policy import CallInfo, ClusterPolicy, EngineLoad
from parrotsim.sim.model.engine import Engine
from parrotsim.sim.model.sequence import Sequence

SequenceFactory = Callable[[CallInfo, Engine], Sequence]


def plain_sequence(info: CallInfo, engine: Engine) -> Sequence:
    """A sequence that fills its whole prompt (no prefix sharing)."""
    return Sequence(info.uid, info.app_id, info.call, info.prompt_len, info.output_len,
                    order=(info.app_seq, info.uid), max_requests=info.max_requests,
                    request=info, fill_breaks=info.fill_breaks)


class Manager:
    """Holds ready calls and dispatches them through ``policy``.

    The manager stamps each queued :class:`CallInfo`'s arrival and dispatch. ``on_done(info,
    seq)`` is called when an engine finishes a call; ``make_sequence`` turns a dispatched call
    into the engine's sequence (the Parrot mechanics fork prefix contexts there).
    """

    def __init__(self, env: simpy.Environment, engines: list[Engine], policy: ClusterPolicy,
                 on_done: Callable[[CallInfo, Sequence], None],
                 make_sequence: SequenceFactory = plain_sequence,
                 loads: list[EngineLoad] | None = None,
                 on_dispatch: Callable[[CallInfo, Sequence], None] | None = None) -> None:
        self.env = env
        self.engines = engines
        self.policy = policy
        self.on_done = on_done
        self.make_sequence = make_sequence
        self.on_dispatch = on_dispatch
        self.loads = loads or [EngineLoad(e.engine_id) for e in engines]
        self.queue: list[CallInfo] = []
        self.dispatched = 0
        self._dispatching = False  # applying decisions: calls arriving now wait for the next pass
        self._arrived_meanwhile = False
        if policy.heartbeat_interval:
            env.process(self._heartbeats(policy.heartbeat_interval))

    def arrive(self, info: CallInfo) -> None:
        """A call is ready to run now."""
        info.arrived = self.env.now
        self.queue.append(info)
        if self._dispatching:  # a dependent released by a dispatch just made (pipelined mode)
            self._arrived_meanwhile = True
        else:
            self._dispatch()

    def engine_finished(self, seq: Sequence, t: float) -> None:
        """Callback of the engines: ``seq`` produced its last token at ``t``."""
        info = seq.request
        load = self.loads[seq.engine_id]
        load.num_requests -= 1
        load.reserved_tokens -= info.tokens
        if self.policy.objective(info) == "latency":
            load.latency_calls -= 1
        bound = self.policy.call_bound(info)
        if bound is not None:
            load.bounds.remove(bound)
            load.requests_bound = min(load.bounds, default=1 << 30)
        self.policy.on_finish(info, load.engine_id)
        self.on_done(info, seq)
        if self.queue:
            self._dispatch()

    def _dispatch(self) -> None:
        """Ask the policy and apply its decisions; calls that become ready while they are
        applied are considered in a further pass, once every load is up to date."""
        self._dispatching = True
        try:
            while True:
                self._arrived_meanwhile = False
                self._dispatch_once()
                if not self._arrived_meanwhile:
                    return
        finally:
            self._dispatching = False

    def _dispatch_once(self) -> None:
        decisions = self.policy.dispatch(self.queue, self.loads, self.env.now)
        if not decisions:
            return
        if len(decisions) == len(self.queue):
            self.queue = []
        else:
            chosen = {id(info) for info, _ in decisions}
            self.queue = [c for c in self.queue if id(c) not in chosen]
        for info, engine_id in decisions:
            load = self.loads[engine_id]
            load.num_requests += 1
            load.reserved_tokens += info.tokens
            if self.policy.objective(info) == "latency":
                load.latency_calls += 1
            bound = self.policy.call_bound(info)
            if bound is not None:
                load.bounds.append(bound)
                load.requests_bound = min(load.requests_bound, bound)
            engine = self.engines[engine_id]
            seq = self.make_sequence(info, engine)
            seq.engine_id = engine_id
            self.dispatched += 1
            info.dispatched = self.env.now
            info.engine = engine_id
            info.seq = seq
            if self.on_dispatch is not None:
                self.on_dispatch(info, seq)
            engine.submit(seq)

    def _heartbeats(self, interval: float):
        """Worker heartbeats every ``interval`` seconds while anything can still happen. A
        heartbeat after which no event is scheduled (nothing was dispatched, no call is on its
        way, no engine is busy) is the last: every later one would report the same loads to
        the policy and change nothing, so the run ends instead of ticking forever."""
        while True:
            yield self.env.timeout(interval)
            self.policy.on_heartbeat(self.loads, [e.num_requests for e in self.engines],
                                     self.env.now)
            if self.queue:
                self._dispatch()
            if self.env.peek() == math.inf:
                return

