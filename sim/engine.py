"""One LLM engine as a SimPy process running an iteration loop (continuous batching).

Each iteration the engine asks its batching policy for a batch, sleeps for the cost model's
iteration time, then emits tokens and releases the KV memory of finished calls.

Fast-forward: when a batch is decode-only, the policy says how many identical decode iterations
follow (until the first call finishes or memory would run short); the engine sleeps through all
of them in one event (the cost model sums their durations in closed form), waking early only if
a new call arrives, in which case it finishes the iteration in progress and resumes normal
scheduling. Stepping and fast-forwarding give the same per-call times up to float rounding
(well under a nanosecond), which a test checks.
"""

from __future__ import annotations

from collections.abc import Callable

import simpy

from policies.engine.base import EnginePolicy, EngineState
from sim.costmodel import CostModel, SharedGroup
from sim.kv_cache import KVCache
from sim.prefix_cache import PrefixCache
from sim.sequence import Batch, Sequence

FinishCallback = Callable[[Sequence, float], None]


class Engine:
    """A simulated engine: ``kernel`` is ``paged`` or ``shared_prefix`` (decode attention)."""

    def __init__(self, env: simpy.Environment, engine_id: int, policy: EnginePolicy,
                 cost: CostModel, kv: KVCache, on_finish: FinishCallback,
                 kernel: str = "paged", fast_forward: bool = True,
                 prefix_cache: PrefixCache | None = None) -> None:
        self.env = env
        self.engine_id = engine_id
        self.policy = policy
        self.cost = cost
        self.state = EngineState(kv)
        self.on_finish = on_finish
        self.shared_kernel = kernel == "shared_prefix"
        self.fast_forward = fast_forward
        self.prefix_cache = prefix_cache
        self.clock = 0.0
        self.busy_time = 0.0
        self.iterations = 0
        self.batched_seqs = 0
        self.preemptions = 0
        self.kv_timeline: list[tuple[float, int]] = [(0.0, 0)]
        self._resume = env.event()
        self._idle = False
        self._token = 0
        self._stretch: tuple | None = None  # (start, DecodeStretch, steps, end) in a stretch
        self.process = env.process(self._loop())

    # ---- interface for the manager -------------------------------------------------------
    @property
    def kv(self) -> KVCache:
        return self.state.kv

    @property
    def num_requests(self) -> int:
        """Calls on this engine that have not finished (waiting or running)."""
        return len(self.state.waiting) + len(self.state.running)

    def submit(self, seq: Sequence) -> None:
        """A call arrives at the engine now."""
        self.policy.accept(seq)
        seq.arrived = self.env.now
        self.state.waiting.append(seq)
        if self._stretch is not None:
            self._cut_stretch()
        elif self._idle:
            self._idle = False
            self._resume.succeed()

    def notify(self) -> None:
        """Something outside the engine made a waiting sequence runnable (its inputs completed):
        reschedule after the current iteration."""
        if self._stretch is not None:
            self._cut_stretch()
        elif self._idle:
            self._idle = False
            self._resume.succeed()

    # ---- waking the process --------------------------------------------------------------
    def _sleep_until(self, end: float) -> simpy.Event:
        """A fresh event for the loop to wait on, firing at ``end`` unless re-armed."""
        self._resume = self.env.event()
        self._arm(end)
        return self._resume

    def _arm(self, end: float) -> None:
        """Make the pending ``_resume`` fire at ``end``; earlier arming becomes stale."""
        self._token += 1
        token = self._token
        self.env.timeout(max(0.0, end - self.env.now)).callbacks.append(
            lambda _ev: self._wake(token))

    def _wake(self, token: int) -> None:
        if token == self._token:
            self._resume.succeed()

    def _cut_stretch(self) -> None:
        """A call arrived during a fast-forwarded stretch: stop after the current iteration."""
        start, stretch, steps, _ = self._stretch
        done = stretch.steps_until(self.env.now - start, steps)
        if done < steps:
            end = start + stretch.duration(done)
            self._stretch = (start, stretch, done, end)
            self._arm(end)

    # ---- the loop ------------------------------------------------------------------------
    def _loop(self):
        env, state = self.env, self.state
        while True:
            batch = self.policy.schedule(state) if state.waiting or state.running else None
            if batch is None or batch.empty:  # nothing runnable until something arrives
                self._idle = True
                self._resume = env.event()
                yield self._resume
                self.clock = env.now
                continue
            start = self.clock
            if batch.prefills:  # never cut short: wait on a plain timeout
                end = start + self.cost.iteration_time(batch, *self._shared_groups(batch))
                yield env.timeout(max(0.0, end - env.now))
                self._account(start, end, batch)
                self.clock = end
                self._emit_prefill(batch, start, end)
                continue
            groups, shared_tokens = self._shared_groups(batch)
            kv = sum(s.cached_len + s.ctx.tokens for s in batch.decodes) - shared_tokens
            stretch = self.cost.decode_stretch(len(batch.decodes), kv, len(batch.decodes), groups)
            steps = self.policy.stable_decode_steps(state, batch) if self.fast_forward else 1
            end = start + stretch.duration(steps)
            self._stretch = (start, stretch, steps, end)
            yield self._sleep_until(end)
            _, _, steps, end = self._stretch
            self._stretch = None
            self._account(start, end, batch, steps)
            self.clock = end
            self._emit_decode(batch, steps, start + stretch.step(0), end)

    def _shared_groups(self, batch: Batch) -> tuple[list[SharedGroup], int]:
        """Shared-prefix groups among the decodes, and the prefix tokens they cover."""
        if not self.shared_kernel or not batch.decodes:
            return [], 0
        sizes: dict[int, list[int]] = {}
        for s in batch.decodes:
            if s.prefix_ctx is not None and s.cached_len > 0:
                entry = sizes.setdefault(id(s.prefix_ctx), [s.cached_len, 0])
                entry[1] += 1
        groups = [(p, n) for p, n in sizes.values() if n > 1]
        return groups, sum(p * n for p, n in groups)

    # ---- bookkeeping ---------------------------------------------------------------------
    def _account(self, start: float, end: float, batch: Batch, steps: int = 1) -> None:
        self.busy_time += end - start
        self.iterations += steps
        self.batched_seqs += steps * (len(batch.prefills) + len(batch.decodes))
        self.kv_timeline.append((end, self.state.kv.used_blocks))

    def _emit_prefill(self, batch: Batch, start: float, end: float) -> None:
        for seq, n in batch.prefills:
            seq.filled += n
            if seq.admitted < 0:
                seq.admitted = start
            if seq.filled == seq.fill_target:
                seq.last_fill = end
                if seq.output_len == 0:  # a shared-prefix fill: its KV becomes the parent
                    seq.finished = end
                    self.state.running.remove(seq)
                    self.prefix_cache.filled(seq)
                elif self.policy.prefill_emits_token:
                    self._emit(seq, 1, end, end)
        for seq in batch.decodes:
            self._emit(seq, 1, end, end)

    def _emit_decode(self, batch: Batch, steps: int, first_end: float, end: float) -> None:
        if steps > 1:
            self.state.kv.grow_each([s.ctx for s in batch.decodes], steps - 1)
        for seq in batch.decodes:
            if seq.first_token < 0:
                seq.first_token = first_end
            seq.generated += steps
            if seq.generated >= seq.output_len:
                self._finish(seq, end)

    def _emit(self, seq: Sequence, tokens: int, first: float, end: float) -> None:
        if seq.first_token < 0:
            seq.first_token = first
        seq.generated += tokens
        if seq.generated >= seq.output_len:
            self._finish(seq, end)

    def _finish(self, seq: Sequence, end: float) -> None:
        seq.finished = end
        self.state.running.remove(seq)
        self.state.kv.release(seq.ctx)
        seq.ctx = None
        if seq.prefix_ctx is not None and self.prefix_cache is not None:
            self.prefix_cache.release(seq.prefix_ctx.key, end)
        self.on_finish(seq, end)
