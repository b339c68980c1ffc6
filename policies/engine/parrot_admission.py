"""The admission half of Parrot's engine scheduler (:mod:`parrotsim.policies.engine.parrot`):
which waiting jobs are ready, how many tokens a Fill job takes, and the FIFO walk that admits
jobs from the waiting queue (the iteration's batch-size and batched-token caps, Fills that
need blocks that are not free), with the shortcuts that keep it from walking jobs that cannot
change the outcome: parked jobs looked at first, Generates held back for a block taken back
without a walk, and the queue behind them not walked again while nothing about it changed.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from typing import TYPE_CHECKING

from parrotsim.sim.model.engine_policy import EnginePolicy, EngineState
from parrotsim.sim.model.sequence import Sequence

if TYPE_CHECKING:
    from parrotsim.policies.engine.parrot import ParrotEngineConfig


def is_ready(seq: Sequence) -> bool:
    """Whether a sequence may start: its inputs are complete (a call dispatched early, in the
    artifact's pipelined mode, waits for its producers) and it has no prefix, or its prefix
    fill has completed."""
    if seq.ctx is not None:
        return True
    if seq.waiting_inputs:
        return False
    return seq.prefix_ctx is None or getattr(seq.prefix_ctx, "ready", True)


class ParrotAdmission(EnginePolicy):
    """Parrot's FIFO admission over an engine's waiting queue; the scheduler builds on it."""

    def __init__(self, cfg: ParrotEngineConfig) -> None:
        self.cfg = cfg
        #: sequences the admission walk found not ready (waiting for their inputs or their
        #: prefix context), by uid: they stay in the waiting queue until ready
        self._parked: dict[int, Sequence] = {}
        #: (jobs in the queue after those, jobs before it, free blocks) when the walk of the
        #: queue after the held-back jobs last admitted nothing (and the memory stalls that
        #: walk counted); kept only from one held-back iteration to the next
        self._idle_rest: tuple[int, int, int] | None = None
        self._idle_rest_stalls = 0

    def _fill_tokens(self, seq: Sequence) -> int:
        """Tokens of the sequence's next Fill job: the rest of its prompt, up to the chunk size
        and the next of its ``fill_breaks`` (a constant prefix filled by a job of its own)."""
        chunk = self.cfg.fill_chunk_size
        n = seq.to_fill if chunk is None else min(seq.to_fill, chunk)
        for b in seq.fill_breaks:
            if b > seq.filled:
                return min(n, b - seq.filled)
        return n

    @staticmethod
    def _fill_blocks(state: EngineState, seq: Sequence, n: int) -> int:
        kv = state.kv
        return kv.blocks_for(n) if seq.ctx is None else kv.extra_blocks(seq.ctx, n)

    def _release_parked(self, state: EngineState) -> bool:
        """Forked calls whose prefix became ready (and calls whose inputs completed) join the
        waiting tail, in queue order (True if any did). The parked sequences are looked at
        first: the queue is walked only when one of them is ready."""
        ready_uids = {uid for uid, s in self._parked.items() if is_ready(s)}
        if not ready_uids:
            return False
        ready = [s for s in state.waiting if s.uid in ready_uids]
        for s in ready:
            state.waiting.remove(s)
            del self._parked[s.uid]
        state.waiting.extend(ready)
        return True

    def _admit(self, state: EngineState, dry: bool = False,
               expected: set[int] | None = None) -> list[tuple[Sequence, int]]:
        """FIFO admission: (sequence, tokens) per admitted job (tokens 0 for a Generate). A
        ``dry`` run changes nothing; given ``expected`` uids it stops at the first admitted job
        outside them (the caller only asks whether the admitted set is exactly ``expected``)."""
        n = len(state.running)
        return self._walk(state, state.waiting, n, n, dry, expected)

    def _admit_after(self, state: EngineState, head: list[Sequence],
                     idle_rest: tuple[int, int, int] | None = None
                     ) -> list[tuple[Sequence, int]] | None:
        """:meth:`_admit` when the queue starts with the Generates ``head`` (reversed) that
        the last iteration held back for want of a block: None when it would admit them all
        and nothing else. They are ready and fill nothing: each is admitted while ``jobs <
        max_batch_size`` and (``jobs == 0`` or ``batched + 1 <= max_num_batched_tokens``),
        and ``jobs == batched`` here."""
        cfg = self.cfg
        k, jobs = len(head), len(state.running)
        admitted = min(k, max(0, min(cfg.max_batch_size, cfg.max_num_batched_tokens) - jobs))
        if admitted < k:
            return [(s, 0) for s in reversed(head[k - admitted:])]
        # What follows the head admitted nothing last time, with as many jobs and free
        # blocks: it is the same queue (only appended to, which lengthens it; the jobs in it
        # change only while they run), so it admits nothing again.
        memo = (len(state.waiting) - k, jobs + k, state.kv.num_blocks - state.kv.used_blocks)
        if memo == idle_rest:
            self.memory_stalls += self._idle_rest_stalls
            self._idle_rest = memo
            return None
        stalls = self.memory_stalls
        rest = self._walk(state, itertools.islice(state.waiting, k, None), jobs + k, jobs + k)
        if rest:
            return [(s, 0) for s in reversed(head)] + rest
        self._idle_rest, self._idle_rest_stalls = memo, self.memory_stalls - stalls
        return None

    def _walk(self, state: EngineState, waiting: Iterable[Sequence], jobs: int, batched: int,
              dry: bool = False, expected: set[int] | None = None,
              fills_blocked: bool = False) -> list[tuple[Sequence, int]]:
        """Admit from ``waiting`` (the queue, or what follows its head) given ``jobs`` and
        ``batched`` tokens already in the iteration (see :meth:`_admit`); ``fills_blocked``:
        a Fill before ``waiting`` found its blocks not free (later Fills are passed over).

        One pass with the per-job tests inlined (:func:`is_ready`, :meth:`_fill_tokens`,
        :meth:`_fill_blocks`): a held-back batch leaves a long queue that every iteration
        walks."""
        cfg = self.cfg
        max_batch, max_tokens, chunk = (cfg.max_batch_size, cfg.max_num_batched_tokens,
                                        cfg.fill_chunk_size)
        kv = state.kv
        free, bs = kv.free_blocks, kv.block_size
        out: list[tuple[Sequence, int]] = []
        for s in waiting:
            ctx = s.ctx
            if ctx is None and (s.waiting_inputs or (
                    s.prefix_ctx is not None and not getattr(s.prefix_ctx, "ready", True))):
                if not dry:
                    self._parked[s.uid] = s
                continue
            n = s.fill_target - s.filled
            if n > 0:
                if s.fill_breaks:
                    n = self._fill_tokens(s)
                elif chunk is not None and chunk < n:
                    n = chunk
            else:
                n = 0
            if jobs >= max_batch or (jobs and batched + (n or 1) > max_tokens):
                break
            if n:
                if fills_blocked:
                    continue
                need = -(-n // bs) if ctx is None else -(-(ctx.tokens + n) // bs) - ctx.blocks
                if need > free:
                    if not dry:
                        self.memory_stalls += 1
                    fills_blocked = True
                    continue
                free -= need
            out.append((s, n))
            jobs += 1
            batched += n or 1
            if expected is not None and s.uid not in expected:
                break
        return out

    def _take(self, state: EngineState, jobs: list[tuple[Sequence, int]]) -> None:
        """Move admitted jobs (in queue order) from the waiting queue to ``running``."""
        waiting = state.waiting
        k = len(jobs)
        if k and waiting[k - 1] is jobs[-1][0]:  # k queue entries in order, the last at k - 1:
            for _ in range(k):                   # they are the head of the queue
                waiting.popleft()
        elif k:
            taken = {s for s, _ in jobs}  # sequences hash and compare by identity
            kept = [s for s in waiting if s not in taken]
            waiting.clear()
            waiting.extend(kept)
        state.running.extend([s for s, _ in jobs])
