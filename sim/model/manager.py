"""The service's manager: queues ready calls and asks the cluster policy where to run them.

The policy is consulted on events only: a call arrives (or becomes ready), a call finishes, or
(for policies that model one, like FastChat's controller) a worker heartbeat arrives; the
heartbeats stop once nothing else is left to happen. The
manager keeps each engine's :class:`~parrotsim.sim.model.cluster_policy.EngineLoad` (its own dispatch
accounting), turns each decision into a :class:`~parrotsim.sim.model.sequence.Sequence` submitted to the chosen
engine, and tells the call's owner when the engine has produced the whole output.

A call the chosen engine can never run (:mod:`parrotsim.sim.model.admission`) is not submitted:
the manager records why on the call (``CallInfo.error``), takes it off the engine's load as if
it had finished and tells the call's owner through ``on_reject``.
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
    seq)`` is called when an engine finishes a call, ``on_reject(info)`` when a call is rejected
    (without it a rejection raises ``ValueError``); ``make_sequence`` turns a dispatched call
    into the engine's sequence (the Parrot mechanics fork prefix contexts there).
    """

    def __init__(self, env: simpy.Environment, engines: list[Engine], policy: ClusterPolicy,
                 on_done: Callable[[CallInfo, Sequence], None],
                 make_sequence: SequenceFactory = plain_sequence,
                 loads: list[EngineLoad] | None = None,
                 on_dispatch: Callable[[CallInfo, Sequence], None] | None = None,
                 on_reject: Callable[[CallInfo], None] | None = None) -> None:
        self.env = env
        self.engines = engines
        self.policy = policy
        self.on_done = on_done
        self.make_sequence = make_sequence
        self.on_dispatch = on_dispatch
        self.on_reject = on_reject
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
        self._release(info, seq.engine_id)
        self.on_done(info, seq)
        if self.queue:
            self._dispatch()

    def _release(self, info: CallInfo, engine_id: int) -> None:
        """Take a finished (or rejected) call off its engine's load; tell the policy."""
        load = self.loads[engine_id]
        load.num_requests -= 1
        load.reserved_tokens -= info.tokens
        if self.policy.objective(info) == "latency":
            load.latency_calls -= 1
        bound = self.policy.call_bound(info)
        if bound is not None:
            load.bounds.remove(bound)
            load.requests_bound = min(load.bounds, default=1 << 30)
        self.policy.on_finish(info, load.engine_id)

    def _dispatch(self) -> None:
        """Ask the policy and apply its decisions until it places nothing more: calls that
        become ready while they are applied (Parrot's pipelined consumers) are considered in a
        further pass once every load is up to date, and a rejected call frees the load it was
        counted in at once, which may let the policy place calls it held back."""
        self._dispatching = True
        try:
            while True:
                self._arrived_meanwhile = False
                rejected = self._dispatch_once()
                if not (self._arrived_meanwhile or rejected and self.queue):
                    return
        finally:
            self._dispatching = False

    def _dispatch_once(self) -> bool:
        """Start the policy's decisions now; whether some call was rejected."""
        decisions = self.policy.dispatch(self.queue, self.loads, self.env.now)
        if not decisions:
            return False
        if len(decisions) == len(self.queue):
            self.queue = []
        else:
            chosen = {id(info) for info, _ in decisions}
            self.queue = [c for c in self.queue if id(c) not in chosen]
        rejected = False
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
            info.dispatched = self.env.now
            info.engine = engine_id
            problem = engine.admission_problem(info.prompt_len, info.output_len,
                                               info.shared_tokens)
            if problem is not None:
                self._reject(info, engine_id, problem)
                rejected = True
                continue
            seq = self.make_sequence(info, engine)
            seq.engine_id = engine_id
            self.dispatched += 1
            info.seq = seq
            if self.on_dispatch is not None:
                self.on_dispatch(info, seq)
            engine.submit(seq)
        return rejected

    def _reject(self, info: CallInfo, engine_id: int, problem: str) -> None:
        info.error = f"rejected by engine {engine_id}: {problem}"
        self._release(info, engine_id)
        if self.on_reject is None:
            raise ValueError(f"call {info.call!r} of app {info.app_id!r}: {info.error}")
        self.on_reject(info)

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

