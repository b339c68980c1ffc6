"""Parrot's engine-local scheduler (artifact ``parrot/engine/scheduler.py``), tag ``parrot``.

experiments.md sections 1.4 and 4. A call is served by jobs: one Fill per prompt chunk (the whole
prompt unless ``fill_chunk_size``), then one Generate that runs until the output is complete. A
job joins the tail of the engine's FIFO waiting queue when the previous job of its call has
finished (a forked call's first Fill only once its prefix context is ready), so a sequence whose
fill just completed re-enters the queue as a Generate job. Each iteration:

* ``fifo`` (default): admit waiting jobs in FIFO order while ``jobs + 1 <= max_batch_size`` and
  ``batched tokens + (fill tokens, or 1 per Generate) <= max_num_batched_tokens`` (running
  Generates count one token each); Fills and Generates mix in one iteration. Then sort the
  running jobs by (arrival at the engine, uid) and walk them accumulating each context length
  (a forked prefix counted again per job); the first job that would exceed ``max_total_tokens``
  and every job after it are held back: pushed to the head of the waiting queue one by one (so
  in reverse order), keeping their KV (the artifact calls it preemption).
* ``fifo_v2``: the same, but running jobs are sorted by ``Sequence.order`` (app arrival rank,
  then uid): app-level FIFO. The artifact sorted by process id only (stable), so jobs of one app
  kept their list order, which the reversed re-insertion of held-back jobs flips from one
  iteration to the next; the uid tie-break makes the order total and the iterations repeatable.
* ``tgi``: if some Fill is waiting, run a prefill-only iteration with the waiting Fills in order
  up to ``max_num_batched_tokens`` (no batch-size cap) and put every running Generate back at
  the head of the waiting queue; otherwise as ``fifo``.

Forked sequences (``prefix_ctx`` set) allocate ``kv.create(prefix_ctx)`` and fill only
``fill_target - filled`` tokens (``filled`` starts at ``cached_len``). Fill and Generate are
separate (``prefill_emits_token = False``).

Not in the artifact (which had no memory checks and could spin on an empty batch), so that a
simulation never crashes or stalls: a Fill whose blocks do not fit is not admitted (later Fills
wait behind it; later Generates may still be admitted); a Generate that cannot get a block is
held back like a preempted job; if that leaves nothing to run, the newest sequences holding KV
are preempted by recompute until the oldest held Generate fits; and the first job of the walk
always runs even if its context alone exceeds ``max_total_tokens``, as does a job alone in
an iteration whose fill exceeds ``max_num_batched_tokens``.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable
from operator import attrgetter
from typing import ClassVar, Literal

from pydantic import Field

from parrotsim.policies.engine.kv_horizon import steps_within_blocks
from parrotsim.policies.engine.parrot_shortage import grow_decodes, held_tokens, short_step
from parrotsim.sim.model.admission import EngineLimits
from parrotsim.sim.model.engine_policy import (
    EnginePolicy,
    EnginePolicyConfig,
    EngineState,
    register_engine_policy,
)
from parrotsim.sim.model.sequence import Batch, Sequence

_ARRIVAL_ORDER = attrgetter("arrived", "uid")
_APP_ORDER = attrgetter("order")


@register_engine_policy
class ParrotEngineConfig(EnginePolicyConfig):
    """Parrot engine JSON ``scheduler`` knobs plus ``num_kv_cache_blocks``/``fill_chunk_size``."""

    policy: Literal["parrot"] = "parrot"
    runtime: ClassVar[str] = "parrot"
    scheduler: Literal["fifo", "fifo_v2", "tgi"] = "fifo"
    max_batch_size: int = Field(default=256, gt=0)
    max_num_batched_tokens: int = Field(default=2560, gt=0)
    max_total_tokens: int | None = Field(default=None, gt=0)
    num_kv_cache_blocks: int | None = Field(default=None, gt=0)
    fill_chunk_size: int | None = Field(default=None, gt=0)

    def kv_blocks(self, capacity_tokens: int, block_size: int) -> int:
        if self.num_kv_cache_blocks is not None:
            return self.num_kv_cache_blocks
        return super().kv_blocks(capacity_tokens, block_size)

    def limits(self, kv_blocks: int, block_size: int) -> EngineLimits:
        """Prompts are filled in chunks or alone (any length); the first output token comes
        from a Generate step, whose KV is stored."""
        return EngineLimits(kv_blocks, block_size, fill_emits_token=False)

    def make(self) -> ParrotEnginePolicy:
        return ParrotEnginePolicy(self)


def _ready(seq: Sequence) -> bool:
    """Whether a sequence may start: its inputs are complete (a call dispatched early, in the
    artifact's pipelined mode, waits for its producers) and it has no prefix, or its prefix
    fill has completed."""
    if seq.ctx is not None:
        return True
    if seq.waiting_inputs:
        return False
    return seq.prefix_ctx is None or getattr(seq.prefix_ctx, "ready", True)


class ParrotEnginePolicy(EnginePolicy):
    """The decision logic of Parrot's engine scheduler (see module docstring)."""

    prefill_emits_token = False

    def __init__(self, cfg: ParrotEngineConfig) -> None:
        self.cfg = cfg
        #: sequences the admission walk found not ready (waiting for their inputs or their
        #: prefix context), by uid: they stay in the waiting queue until ready
        self._parked: dict[int, Sequence] = {}
        self._held: set[int] = set()  # uids the last walk held back
        self._unstable = False  # the last iteration held back for memory or preempted
        #: the Generates the last iteration put back at the head of the waiting queue for want
        #: of a block (in running order; the queue holds them reversed), None if it put back
        #: anything else
        self._short_head: list[Sequence] | None = None
        self._short_tokens = 0  # their KV tokens (cached prefixes included)
        #: (jobs in the queue after those, jobs before it, free blocks) when the walk of the
        #: queue after the held-back jobs last admitted nothing (and the memory stalls that
        #: walk counted); kept only from one held-back iteration to the next
        self._idle_rest: tuple[int, int, int] | None = None
        self._idle_rest_stalls = 0

    # ---- helpers -------------------------------------------------------------------------
    @property
    def _key(self) -> Callable[[Sequence], tuple]:
        """Running order: (arrival at the engine, uid), or ``Sequence.order`` for fifo_v2."""
        return _APP_ORDER if self.cfg.scheduler == "fifo_v2" else _ARRIVAL_ORDER

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

    def on_iteration_end(self, state: EngineState, batch: Batch, steps: int,
                         finished: list[Sequence]) -> None:
        """Fill jobs that ran leave ``running``: their call's next job (the next chunk, or
        the Generate) joins the waiting tail, in running order."""
        if not batch.prefills:
            return
        filled = {id(s) for s, _ in batch.prefills}
        done = [s for s in state.running if id(s) in filled]
        if done:
            state.running = [s for s in state.running if id(s) not in filled]
            state.waiting.extend(done)

    def _release_parked(self, state: EngineState) -> bool:
        """Forked calls whose prefix became ready (and calls whose inputs completed) join the
        waiting tail, in queue order (True if any did). The parked sequences are looked at
        first: the queue is walked only when one of them is ready."""
        ready_uids = {uid for uid, s in self._parked.items() if _ready(s)}
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
              dry: bool = False, expected: set[int] | None = None
              ) -> list[tuple[Sequence, int]]:
        """Admit from ``waiting`` (the queue, or what follows its head) given ``jobs`` and
        ``batched`` tokens already in the iteration (see :meth:`_admit`).

        One pass with the per-job tests inlined (:func:`_ready`, :meth:`_fill_tokens`,
        :meth:`_fill_blocks`): a held-back batch leaves a long queue that every iteration
        walks."""
        cfg = self.cfg
        max_batch, max_tokens, chunk = (cfg.max_batch_size, cfg.max_num_batched_tokens,
                                        cfg.fill_chunk_size)
        kv = state.kv
        free, bs = kv.free_blocks, kv.block_size
        fills_blocked = False
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
            taken = {id(s) for s, _ in jobs}
            kept = [s for s in waiting if id(s) not in taken]
            waiting.clear()
            waiting.extend(kept)
        state.running.extend([s for s, _ in jobs])

    # ---- scheduling ----------------------------------------------------------------------
    def schedule(self, state: EngineState) -> Batch:
        idle_rest, self._idle_rest = self._idle_rest, None  # kept only by a shortage step
        if self._parked and self._release_parked(state):
            idle_rest = None  # the queue changed
        self._held, self._unstable = set(), False
        head, self._short_head = self._short_head, None
        waiting = state.waiting
        if head is not None and not (len(waiting) >= len(head) and waiting[0] is head[-1]
                                     and waiting[len(head) - 1] is head[0]):
            head = None  # the queue no longer starts with the jobs held back for blocks
        if self.cfg.scheduler == "tgi":
            batch = self._prefill_only(state, len(head) if head else 0)
            if batch is not None:
                return batch
        if head is None:
            jobs = self._admit(state)
        else:
            jobs = self._admit_after(state, head, idle_rest)
            if jobs is None:  # the held-back Generates come back, and nothing else
                done = short_step(state, head, self._key, self.cfg.max_total_tokens,
                                  self._short_tokens)
                if done is None:
                    self._idle_rest = None
                else:
                    decodes, short, self._short_tokens = done
                    if short:
                        self.memory_stalls += 1
                        self._unstable = True
                        self._short_head = short
                    return Batch(decodes=decodes)
                jobs = [(s, 0) for s in reversed(head)]
        fill_n = {s.uid: n for s, n in jobs if n}
        self._take(state, jobs)
        state.running.sort(key=self._key)
        limit = self.cfg.max_total_tokens
        survivors, held = state.running, []
        if limit is not None:
            total, survivors = 0, []
            for s in state.running:
                c = s.kv_tokens
                if held or (survivors and total + c > limit):
                    held.append(s)
                else:
                    survivors.append(s)
                    total += c
        kv = state.kv
        prefills = []
        if fill_n:
            for s in survivors:
                if s.uid in fill_n:
                    s.allocate(kv, fill_n[s.uid])
                    prefills.append((s, fill_n[s.uid]))
        decodes, short = grow_decodes(kv, survivors, fill_n)
        self._unstable = bool(short) or any(s.uid in fill_n for s in held)
        if short:
            self.memory_stalls += 1
        stuck = not prefills and not decodes
        if stuck:  # stuck for memory: free some, run the oldest job
            cands = [s for s in (*state.running, *state.waiting) if _ready(s)]
            if cands:
                self._unstable = True
                prefills, decodes = self._unstick(state, min(cands, key=self._key), fill_n)
        if held or stuck:  # every survivor ran otherwise: running stays as sorted
            ran = {id(s) for s, _ in prefills} | {id(s) for s in decodes}
            back = [s for s in state.running if id(s) not in ran]
            state.running = [s for s in state.running if id(s) in ran]
            state.waiting.extendleft(back)  # one by one to the head, as the artifact preempts
        elif short:  # every survivor ran but those short of a block, which are in running order
            if prefills:
                out = {id(s) for s in short}
                state.running = [s for s in state.running if id(s) not in out]
            else:  # the decodes are what ran, in running order
                state.running = list(decodes)
            state.waiting.extendleft(short)
            self._short_head, self._short_tokens = short, held_tokens(short)
        self._held = {s.uid for s in held}
        return Batch(prefills=prefills, decodes=decodes)

    def _prefill_only(self, state: EngineState, skip: int = 0) -> Batch | None:
        """tgi: Fills from the waiting queue in order; running Generates go back to the head.
        ``skip``: the queue starts with that many Generates held back for blocks."""
        kv, cfg = state.kv, self.cfg
        free, tokens = kv.free_blocks, 0
        jobs: list[tuple[Sequence, int]] = []
        for s in itertools.islice(state.waiting, skip, None):
            if s.to_fill == 0:
                continue
            if not _ready(s):
                self._parked[s.uid] = s
                continue
            n = self._fill_tokens(s)
            need = self._fill_blocks(state, s, n)
            if need > free:
                self.memory_stalls += 1
                break
            if jobs and tokens + n > cfg.max_num_batched_tokens:
                break
            jobs.append((s, n))
            tokens += n
            free -= need
        if not jobs:
            return None
        gens = state.running
        state.running = []
        self._take(state, jobs)
        state.waiting.extendleft(reversed(gens))
        for s, n in jobs:
            s.allocate(kv, n)
        self._unstable = True
        return Batch(prefills=jobs)

    def _unstick(self, state: EngineState, seq: Sequence, fill_n: dict[int, int]
                 ) -> tuple[list[tuple[Sequence, int]], list[Sequence]]:
        """Preempt the newest sequences holding KV (by recompute) until the oldest job ``seq``
        fits, then run it alone; returns (prefills, decodes), empty if it never fits."""
        kv = state.kv
        n = self._fill_tokens(seq) if seq.to_fill > 0 else 0
        victims = [s for s in (*state.running, *state.waiting)
                   if s.ctx is not None and s is not seq]
        victims.sort(key=self._key)

        def fits() -> bool:
            if n:
                return self._fill_blocks(state, seq, n) <= kv.free_blocks
            return kv.free_blocks >= 1 if seq.ctx is None else kv.can_grow(seq.ctx, 1)

        if not fits():
            self.memory_stalls += 1
        while not fits() and victims:
            v = victims.pop()
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

    def stable_decode_steps(self, state: EngineState, batch: Batch) -> int:
        if batch.prefills or not batch.decodes or self._unstable:
            return 1
        admitted = self._admit(state, dry=True, expected=self._held)
        if len(admitted) != len(self._held) or any(s.uid not in self._held for s, _ in admitted):
            return 1  # the next iteration would admit other jobs
        decodes = batch.decodes
        steps = min([s.output_len - s.generated for s in decodes])
        limit = self.cfg.max_total_tokens
        if limit is not None and len(decodes) > 1:
            before = sum(s.kv_tokens - 1 for s in decodes)  # the lengths this walk used
            steps = min(steps, (limit - before) // len(decodes) + 1)
        steps = steps_within_blocks(decodes, state.kv.free_blocks, state.kv.block_size, steps)
        return max(1, steps)
