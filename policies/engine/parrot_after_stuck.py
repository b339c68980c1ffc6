"""The iteration after a stuck one, decided by the shortage step instead of a full walk.

When an iteration could run nothing for want of KV blocks, Parrot's engine ran its oldest job
alone, preempting the newest KV holders by recompute, and put every other running job back at
the head of the waiting queue, one by one (:meth:`~parrotsim.policies.engine.parrot.ParrotEnginePolicy._unstick`).
The running jobs were in running order, and the preempted ones were the newest, so the queue
then starts with the preempted jobs, now Fills (``blocked``, reversed), then the Generates that
found no block (``head``, reversed), then the rest. Under Fig 17's KV shortage at 256 engines
this happens ~700 times, and the next iteration's full walk (admit, take, sort and grow ~110
jobs) cost about as much as the stuck iteration itself.

The walk of that queue admits each blocked Fill only if its blocks are free, and the first
one that is not blocks every later Fill. When every one of them stays in the queue (none trips
the batch caps, the first finds its blocks not free) and the walk admits exactly ``head`` and
nothing behind it, the iteration is the one :func:`~parrotsim.policies.engine.parrot_shortage.short_step`
decides after Generates held back for a block, except that the Fills stay where the walk
leaves them: right behind the Generates held back now. Every other case, and any case
``short_step`` declines, goes to the full walk with nothing changed.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import TYPE_CHECKING

from parrotsim.policies.engine.parrot_admission import ParrotAdmission
from parrotsim.policies.engine.parrot_shortage import held_tokens, short_step
from parrotsim.sim.model.engine_policy import EngineState
from parrotsim.sim.model.sequence import Batch, Sequence

if TYPE_CHECKING:
    from parrotsim.policies.engine.parrot import ParrotEngineConfig


class ParrotAfterStuck(ParrotAdmission):
    """The after-stuck step of Parrot's engine scheduler (see module docstring)."""

    def __init__(self, cfg: ParrotEngineConfig) -> None:
        super().__init__(cfg)
        #: (preempted jobs, Generates short of a block), each in running order, that the last
        #: (stuck) iteration put back at the head of the queue, or None
        self._stuck_back: tuple[list[Sequence], list[Sequence]] | None = None

    def _record_stuck_back(self, back: list[Sequence]) -> None:
        """Keep ``back`` (running order) for :meth:`_after_stuck` when it is Generates holding
        KV followed by jobs without KV (the preempted ones)."""
        g = len(back)
        while g and back[g - 1].ctx is None:
            g -= 1
        head, blocked = back[:g], back[g:]
        if head and not [s for s in head if s.ctx is None or s.filled != s.fill_target]:
            self._stuck_back = (blocked, head)

    def _after_stuck(self, state: EngineState, blocked: list[Sequence], head: list[Sequence],
                     key: Callable[[Sequence], tuple], limit: int | None) -> Batch | None:
        """The iteration after a stuck one as the full walk decides it, or None (nothing
        changed) when the full walk must decide (see module docstring)."""
        waiting = state.waiting
        v, k = len(blocked), len(head)
        if not (len(waiting) >= v + k and waiting[v] is head[-1] and waiting[v + k - 1] is head[0]
                and (not v or (waiting[0] is blocked[-1] and waiting[v - 1] is blocked[0]))):
            return None  # the queue changed
        stalls = self.memory_stalls
        if not self._admits_only(state, blocked, head):
            self.memory_stalls = stalls
            return None
        for _ in range(v):
            waiting.popleft()
        done = short_step(state, head, key, limit, held_tokens(head))
        if done is None:
            waiting.extendleft(blocked)
            self.memory_stalls = stalls
            return None
        decodes, short, tokens = done
        for i, s in enumerate(reversed(blocked)):  # behind the jobs held back now
            waiting.insert(len(short) + i, s)
        if short:
            self.memory_stalls += 1
            self._unstable = True
            self._short_head, self._short_tokens = short, tokens
        return Batch(decodes=decodes)

    def _admits_only(self, state: EngineState, blocked: list[Sequence],
                     head: list[Sequence]) -> bool:
        """Whether the FIFO walk of the queue admits exactly ``head``, the ``blocked`` Fills
        before it staying in the queue; counts the memory stalls the walk counts (and parks
        what it parks) on the way."""
        cfg = self.cfg
        max_batch, max_tokens, chunk = (cfg.max_batch_size, cfg.max_num_batched_tokens,
                                        cfg.fill_chunk_size)
        jobs = len(state.running)
        free, bs = state.kv.free_blocks, state.kv.block_size
        fills_blocked = False
        for s in reversed(blocked):  # queue order
            if s.ctx is not None or s.waiting_inputs or (
                    s.prefix_ctx is not None and not getattr(s.prefix_ctx, "ready", True)):
                return False
            n = s.fill_target - s.filled
            if n <= 0:
                return False
            if s.fill_breaks:
                n = self._fill_tokens(s)
            elif chunk is not None and chunk < n:
                n = chunk
            if jobs >= max_batch or (jobs and jobs + n > max_tokens):
                return False  # the walk stops here
            if not fills_blocked:
                if -(-n // bs) <= free:
                    return False  # admitted
                self.memory_stalls += 1
                fills_blocked = True
        k = len(head)  # ready Generates: admitted while the caps allow (jobs == batched)
        if min(k, max(0, min(max_batch, max_tokens) - jobs)) < k:
            return False
        rest = self._walk(state, itertools.islice(state.waiting, len(blocked) + k, None),
                          jobs + k, jobs + k, fills_blocked=fills_blocked)
        return not rest
