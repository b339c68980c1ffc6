"""One LLM engine running an iteration loop (continuous batching) on SimPy's clock.

Each iteration the engine asks its batching policy for a batch, sleeps for the cost model's
iteration time, then emits tokens and releases the KV memory of finished calls. The loop is a
chain of SimPy timeouts with callbacks rather than a generator process: one event per iteration
(or fast-forwarded stretch) instead of two, which matters for runs of millions of calls.

Fast-forward: when a batch is decode-only, the policy says how many identical decode iterations
follow (until the first call finishes or memory would run short); the engine sleeps through all
of them in one event (the cost model sums their durations in closed form), waking early only if
a new call arrives, in which case it finishes the iteration in progress and resumes normal
scheduling. Stepping and fast-forwarding give the same per-call times up to float rounding
(well under a nanosecond), which a test checks.

A decode batch that carries the engine's :class:`~parrotsim.sim.model.decode_ledger.DecodeLedger`
(a policy that decodes all its running calls in lockstep, as vLLM does) is accounted from the
ledger's running totals: no pass over the batch per stretch.

Where fast-forward cannot be exact (a Parrot engine short of KV blocks), iterations the policy
would decide alike still run one event each, timed as stepping times them, but without asking
the policy or passing over the batch for each (:mod:`parrotsim.sim.model.decode_repeat`).

What happens to calls when an iteration ends (accounting, token emission, finished and given-up
calls, answers) is :class:`~parrotsim.sim.model.engine_outcomes.EngineOutcomes`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from heapq import heappush

import simpy
from simpy.core import NORMAL

from parrotsim.sim.model.admission import EngineLimits, admission_problem
from parrotsim.sim.model.costmodel import CostModel, DecodeStretch, SharedGroup
from parrotsim.sim.model.decode_repeat import RepeatedDecodes
from parrotsim.sim.model.engine_outcomes import EngineOutcomes
from parrotsim.sim.model.engine_policy import EnginePolicy, EngineState
from parrotsim.sim.model.forked_groups import ForkedGroups, longest_context, longest_read
from parrotsim.sim.model.front_door import FrontDoor
from parrotsim.sim.model.kv_cache import KVCache
from parrotsim.sim.model.prefix_cache import PrefixCache
from parrotsim.sim.model.sequence import Batch, Sequence
from parrotsim.sim.model.stale_timers import stale_timers

FinishCallback = Callable[[Sequence, float], None]
#: called as ``recorder(engine, start, end, batch, steps)`` for each iteration or fast-forwarded
#: decode stretch when it ends (``parrotsim.sim.harness.timeline``); ``steps`` is what ran
#: (inside a run of repeated decode iterations the sequences' counters lag until it ends)
IterationRecorder = Callable[["Engine", float, float, Batch, int], None]


@dataclass(slots=True)
class InFlight:
    """The work an engine is running: ``batch`` from ``start`` to ``end`` (simulated seconds).

    A prompt-filling iteration is never cut short. A decode-only batch runs as a stretch of
    ``steps`` identical iterations costed by ``stretch``; an arrival may cut it after the
    iteration in progress, which lowers ``steps`` and ``end``. An iteration after the first
    of a run of repeated decodes (``Engine._repeat``) has no stretch: it is one step.
    """

    start: float
    end: float
    batch: Batch
    stretch: DecodeStretch | None = None
    steps: int = 1


class Engine(EngineOutcomes):
    """A simulated engine: ``kernel`` is ``paged``, ``shared_prefix`` or ``parrot_2023`` (decode
    attention of forked batches; ``one_prefix_per_batch``: forked groups count only in a batch
    whose forked decodes share one prefix, as the artifact's kernels served them);
    ``limits``: what it can ever hold, from its policy's config (None: not checked)."""

    def __init__(self, env: simpy.Environment, engine_id: int, policy: EnginePolicy,
                 cost: CostModel, kv: KVCache, on_finish: FinishCallback,
                 kernel: str = "paged", fast_forward: bool = True,
                 prefix_cache: PrefixCache | None = None,
                 recorder: IterationRecorder | None = None,
                 limits: EngineLimits | None = None, one_prefix_per_batch: bool = False) -> None:
        self.env = env
        self.engine_id = engine_id
        self.policy = policy
        self.cost = cost
        # stepping one iteration at a time (an executor that looks at every iteration's
        # sequences) keeps the decode ledger's members up to date after every step
        self.state = EngineState(kv, eager=not fast_forward)
        self.on_finish = on_finish
        #: whether forked groups change the cost (the shared-prefix kernels, or the paged
        #: kernel when the profile measured it over shared pages)
        self.shared_kernel = kernel in ("shared_prefix", "parrot_2023") or (
            kernel == "paged" and prefix_cache is not None and cost.paged_groups)
        #: the forked groups of a decode batch (the artifact's kernels: one prefix per batch)
        self._shared_groups = ForkedGroups(
            self.shared_kernel, kernel == "parrot_2023" or one_prefix_per_batch).of
        self.kernel = kernel
        self.fast_forward = fast_forward
        self.prefix_cache = prefix_cache
        self.limits = limits
        self.clock = 0.0
        self.busy_time = 0.0
        self.iterations = 0
        self.batched_seqs = 0
        self._idle = True  # nothing runnable: the next submit or notify wakes the engine
        # The engine's two events, each put back on the queue once it fired (SimPy empties
        # ``callbacks``: None): ``_timer`` fires at the end of the work in progress,
        # ``_waker`` wakes an idle engine. Either is queued as ``env.timeout`` would.
        self._timer = self._waker = _bare_event(env)
        self._timer.callbacks = self._waker.callbacks = None
        self._boundary_callbacks = [self._on_boundary]  # never changed: shared by every firing
        self._wake_callbacks = [self._on_wake]
        self._stale = stale_timers(env)  # where a replaced timer goes
        self._work: InFlight | None = None  # the iteration or stretch running now
        self._repeat: RepeatedDecodes | None = None  # the run _work belongs to, if any
        self._finished: list[Sequence] = []  # sequences finished by the work just ended
        self.ignored_calls = 0  # sequences the policy gave up on (Batch.ignored)
        # calls in the front end's door and answers on their way out (None: served at once)
        self._door = FrontDoor() if getattr(policy, "front_door", False) else None
        if recorder is not None:  # wrap the accounting: no per-iteration cost when not recording
            self._account = self._recording(recorder)

    # ---- interface for the manager -------------------------------------------------------
    @property
    def kv(self) -> KVCache:
        return self.state.kv

    @property
    def num_requests(self) -> int:
        """Calls on this engine that have not finished (waiting or running)."""
        held = len(self._door) if self._door is not None else 0
        return len(self.state.waiting) + len(self.state.running) + held

    def admission_problem(self, prompt: int, output: int, shared: int = 0) -> str | None:
        """Why a call of ``prompt`` and ``output`` tokens, ``shared`` of its prompt tokens in
        a prefix this engine would cache, can never run here (None: it may; see
        :mod:`parrotsim.sim.model.admission`)."""
        if self.limits is None:
            return None
        cached = shared if self.prefix_cache is not None and 0 < shared < prompt else 0
        return admission_problem(self.limits, prompt, output, cached)

    def submit(self, seq: Sequence) -> None:
        """A call arrives at the engine now."""
        self.policy.accept(seq)
        seq.arrived = self.env.now
        if self._door is not None and self._work is not None:
            waits = self.policy.front_door_waits(seq)
            if waits > 0:  # its HTTP calls wait for iteration ends
                self._door.hold(seq, self._ends_after_current() + waits)
                self._end_work_by(self._door.next_due())
                return
        self.state.waiting.append(seq)
        self.notify()

    def notify(self) -> None:
        """Something changed what the engine could run (a call arrived, or a waiting call's
        inputs completed): reschedule after the iteration in progress."""
        if self._work is not None and (self._work.stretch is not None
                                       or self._repeat is not None):
            self._cut_stretch()
        elif self._idle:  # wake at the current time, after the other events of this instant
            self._idle = False
            waker = self._waker
            if waker.callbacks is not None:  # still queued (cannot happen while idle)
                waker = self._waker = _bare_event(self.env)
            waker.callbacks = self._wake_callbacks
            _schedule(self.env, waker, 0.0)

    # ---- SimPy callbacks: the engine's process is a chain of timeouts ----------------------
    def _wake_at(self, end: float) -> None:
        """Fire :meth:`_on_boundary` at ``end``, replacing the pending firing if any."""
        timer = self._timer
        if timer.callbacks is not None:  # pending: replaced, a new event takes its place
            self._stale.drop(timer)  # fires nothing, taken off the queue in a batch
            timer = self._timer = _bare_event(self.env)
        timer.callbacks = self._boundary_callbacks
        _schedule(self.env, timer, max(0.0, end - self.env.now))

    def _on_wake(self, _event: simpy.Event) -> None:
        self.clock = self.env.now
        self._next_iteration()

    def _on_boundary(self, _event: simpy.Event) -> None:
        """The work in progress ends now: account it, emit its tokens, start the next."""
        work, self._work = self._work, None
        self._account(work)
        self.clock = work.end
        door = self._door
        if door is not None and (door.held or door.replies):
            self.state.waiting.extend(door.admit(self.iterations))
            for seq in door.answers(self.iterations):
                self.on_finish(seq, work.end)
        steps, run = work.steps, self._repeat
        if run is not None:
            if run.step + 1 < run.steps and self._unchanged(run):
                self._next_repeated(run, work.batch)
                return
            self._repeat = None
            steps = run.step + 1
            self._emit_decode(work.batch, steps, run.first_end, work.end)
        elif work.stretch is None:
            self._emit_prefill(work.batch, work.start, work.end)
        else:
            self._emit_decode(work.batch, steps, work.start + work.stretch.first, work.end)
        for seq in work.batch.ignored:
            self._ignore(seq, work.end)
        finished, self._finished = self._finished, []
        self.policy.on_iteration_end(self.state, work.batch, steps, finished)
        self._next_iteration()

    def _cut_stretch(self) -> None:
        """A call arrived during a fast-forwarded stretch: stop after the current iteration."""
        if self._repeat is not None:  # repeated iterations: this one is the last
            self._repeat.steps = self._repeat.step + 1
            return
        work = self._work
        done = work.stretch.steps_until(self.env.now - work.start, work.steps)
        if done < work.steps:
            work.steps = done
            work.end = work.start + work.stretch.duration(done)
            self._wake_at(work.end)

    def _ends_after_current(self) -> int:
        """Iterations ended in all once the iteration in progress ends."""
        work = self._work
        if self._repeat is None and work.stretch is not None:
            return self.iterations + work.stretch.steps_until(self.env.now - work.start,
                                                              work.steps)
        return self.iterations + 1

    def _end_work_by(self, due: int) -> None:
        """Cut a fast-forwarded stretch so that it ends by ``due`` iterations in all (a run of
        repeated iterations stops by itself when a due call joins the waiting queue)."""
        work = self._work
        if self._repeat is None and work.stretch is not None and \
                self.iterations + work.steps > due:
            work.steps = due - self.iterations
            work.end = work.start + work.stretch.duration(work.steps)
            self._wake_at(work.end)

    # ---- the iteration loop --------------------------------------------------------------
    def _next_iteration(self) -> None:
        """Ask the policy for the next batch at ``self.clock`` and sleep until it ends (or go
        idle when nothing is runnable)."""
        state = self.state
        batch = self.policy.schedule(state) if state.waiting or state.running else None
        if batch is not None and self._only_gives_up(batch, self.clock):
            self._next_iteration()
            return
        if batch is None or (not batch.prefills and not batch.decodes):
            door = self._door
            if door is not None and (door.held or door.replies):  # idle: the door opens
                state.waiting.extend(door.admit())
                for seq in door.answers():
                    self.on_finish(seq, self.clock)
                if state.waiting or state.running:
                    self._next_iteration()
                    return
            self._idle = True
            return
        start = self.clock
        if batch.prefills:  # never cut short
            groups, shared_tokens = self._shared_groups(batch)
            longest = self._excess_longest(batch, groups) if groups else None
            end = (start + self.cost.iteration_time(batch, groups, shared_tokens, longest)
                   + self.policy.host_time(batch))
            if not end > start:
                self._stopped_clock(batch, end - start)
            self._work = InFlight(start, end, batch)
            self._wake_at(end)
            return
        decodes = batch.decodes
        if self.shared_kernel:
            groups, shared_tokens = self._shared_groups(batch)
        else:
            groups, shared_tokens = (), 0
        ledger = batch.ledger
        if ledger is not None:  # O(1): the ledger keeps the total
            kv = ledger.kv_tokens() - shared_tokens
        else:
            kv = sum([s.cached_len + s.ctx.tokens for s in decodes]) - shared_tokens
        longest = None
        if self.cost.waves is not None:
            longest = (longest_context(batch) if not groups
                       else self._excess_longest(batch, groups))
        stretch = self.cost.decode_stretch(len(decodes), kv, len(decodes), groups, longest)
        steps = (self.policy.stable_decode_steps(state, batch)
                 if self.fast_forward and not batch.ignored else 1)
        if self._door is not None:  # no fast-forward past a call or answer due in the door
            due = self._door.next_due()
            if due is not None:
                steps = max(1, min(steps, due - self.iterations))
        end = start + stretch.duration(steps)
        if not end > start:
            self._stopped_clock(batch, end - start)
        self._work = InFlight(start, end, batch, stretch, steps)
        self._wake_at(end)
        if steps == 1 and self.fast_forward and ledger is None and not batch.ignored:
            repeats = self.policy.repeated_decode_steps(state, batch)
            if repeats > 1:
                self._repeat = RepeatedDecodes(
                    repeats, end, kv, longest, groups, len(state.running),
                    len(state.waiting), state.kv.used_blocks,
                    [s for s in decodes if s.first_token < 0])

    def _unchanged(self, run: RepeatedDecodes) -> bool:
        """Whether the engine state the policy decided a run of iterations on is as it was
        (nothing outside the engine acted without notifying it)."""
        state = self.state
        return (len(state.running) == run.running and len(state.waiting) == run.waiting
                and state.kv.used_blocks == run.used_blocks)

    def _next_repeated(self, run: RepeatedDecodes, batch: Batch) -> None:
        """Start iteration ``run.step + 1`` of a run of repeated decode iterations at
        ``self.clock``: what :meth:`_next_iteration` would do after the policy decided it
        again, from the run's totals (every decode one token longer), its sequences left
        as they are until the run ends."""
        if run.step == 0 and run.unstamped:  # the first iteration emitted their first token
            for s in run.unstamped:
                s.first_token = run.first_end
        run.step = j = run.step + 1
        self.policy.on_repeated_step(self.state)
        n = len(batch.decodes)
        longest = None if run.longest0 is None else run.longest0 + j
        start = self.clock
        end = start + self.cost.decode_step(n, run.kv0 + n * j, n, run.groups, longest)
        if not end > start:
            self._stopped_clock(batch, end - start)
        self._work = InFlight(start, end, batch, None, 1)  # the run says how it is cut
        self._wake_at(end)

    def _stopped_clock(self, batch: Batch, seconds: float) -> None:
        """An iteration that would not advance the clock: the run would never end."""
        raise ValueError(
            f"engine {self.engine_id}: an iteration of {batch.num_tokens} tokens "
            f"({len(batch.prefills)} prompt chunks, {len(batch.decodes)} decodes) would take "
            f"{seconds:.3g} s; every iteration must take a positive time (check the profile)")

    def _excess_longest(self, batch: Batch, groups: list[SharedGroup]) -> int | None:
        """The ``longest`` the cost model's skewed-batch excess takes for a batch with forked
        ``groups``: the longest read of the shared-prefix kernel's paged phase, the longest
        whole context for the paged kernel over shared pages, else None (no excess)."""
        if self.cost.suffix_waves:
            return longest_read(batch)
        if self.cost.group_waves:
            return longest_context(batch)
        return None


    #: the longest context among a batch's decodes (:func:`forked_groups.longest_context`)
    longest_context = staticmethod(longest_context)


def _bare_event(env: simpy.Environment) -> simpy.Event:
    """A triggered event with no value, to be queued by :func:`_schedule`."""
    event = simpy.Event(env)
    event._ok = True
    event._value = None
    return event


def _schedule(env: simpy.Environment, event: simpy.Event, delay: float) -> None:
    """Queue ``event`` ``delay`` s from now, as ``env.timeout(delay)`` queues its timeout
    (same time, priority and event id), without making a new event."""
    heappush(env._queue, (env._now + delay, NORMAL, next(env._eid), event))
