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
from collections.abc import Callable
from operator import attrgetter
from typing import ClassVar, Literal

from pydantic import Field

from parrotsim.policies.engine.kv_horizon import steps_within_blocks
from parrotsim.policies.engine.parrot_admission import is_ready
from parrotsim.policies.engine.parrot_order import merge_tail
from parrotsim.policies.engine.parrot_shortage import (
    grow_decodes,
    held_tokens,
    repeat_horizon,
    short_step,
)
from parrotsim.policies.engine.parrot_unstick import ParrotUnstick
from parrotsim.sim.model.admission import EngineLimits
from parrotsim.sim.model.engine_policy import (
    EnginePolicyConfig,
    EngineState,
    register_engine_policy,
)
from parrotsim.sim.model.front_door import PARROT_REQUEST_WAITS
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
    #: the engine server serves each request (Fill, Fill, Generate) between iterations
    #: (:mod:`parrotsim.sim.model.front_door`); all of a call's waits are charged before its
    #: first fill (the server's Fill -> Fill -> Generate gaps are not placed between them)
    front_door: bool = False

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


def _follow(running: list[Sequence], jobs: list[tuple[Sequence, int]],
            key: Callable[[Sequence], tuple]) -> bool:
    """Whether the admitted ``jobs`` (queue order) come after ``running`` (in running order)
    and after each other in running order: appending them then needs no sort."""
    last = key(running[-1]) if running else None
    for s, _ in jobs:
        k = key(s)
        if last is not None and not last < k:
            return False
        last = k
    return True


class ParrotEnginePolicy(ParrotUnstick):
    """The decision logic of Parrot's engine scheduler (see module docstring)."""

    prefill_emits_token = False

    def __init__(self, cfg: ParrotEngineConfig) -> None:
        super().__init__(cfg)
        self._held: set[int] = set()  # uids the last walk held back
        self._unstable = False  # the last iteration held back for memory or preempted
        #: the Generates the last iteration put back at the head of the waiting queue for want
        #: of a block (in running order; the queue holds them reversed), None if it put back
        #: anything else
        self._short_head: list[Sequence] | None = None
        self._short_tokens = 0  # their KV tokens (cached prefixes included)
        #: ``running`` is in running order (the last sort's, less the jobs that left)
        self._in_order = False
        #: the last batch came from the step without free blocks after an admission that took
        #: back only the held-back jobs (its memo now set): the same inputs decide it again
        self._repeatable = False
        self.front_door = cfg.front_door

    def front_door_waits(self, seq: Sequence) -> int:
        """Two iteration ends per request: one for a shared-prefix fill; for a call, its Fill
        and Generate, and a Fill of its constant prefix unless that is already cached."""
        if seq.fill_of is not None:
            return PARROT_REQUEST_WAITS
        own_prefix = any(b > seq.cached_len for b in seq.fill_breaks)
        return PARROT_REQUEST_WAITS * (3 if own_prefix else 2)

    # ---- helpers -------------------------------------------------------------------------
    @property
    def _key(self) -> Callable[[Sequence], tuple]:
        """Running order: (arrival at the engine, uid), or ``Sequence.order`` for fifo_v2."""
        return _APP_ORDER if self.cfg.scheduler == "fifo_v2" else _ARRIVAL_ORDER

    def on_iteration_end(self, state: EngineState, batch: Batch, steps: int,
                         finished: list[Sequence]) -> None:
        """Fill jobs that ran leave ``running``: their call's next job (the next chunk, or
        the Generate) joins the waiting tail, in running order."""
        if not batch.prefills:
            return
        filled = {s for s, _ in batch.prefills}  # sequences hash and compare by identity
        done = [s for s in state.running if s in filled]
        if done:
            state.running = [s for s in state.running if s not in filled]
            state.waiting.extend(done)

    # ---- scheduling ----------------------------------------------------------------------
    def schedule(self, state: EngineState) -> Batch:
        idle_rest, self._idle_rest = self._idle_rest, None  # kept only by a shortage step
        if self._parked and self._release_parked(state):
            idle_rest = None  # the queue changed
        self._held, self._unstable, self._repeatable = set(), False, False
        head, self._short_head = self._short_head, None
        stuck_back, self._stuck_back = self._stuck_back, None
        waiting = state.waiting
        if head is not None and not (len(waiting) >= len(head) and waiting[0] is head[-1]
                                     and waiting[len(head) - 1] is head[0]):
            head = None  # the queue no longer starts with the jobs held back for blocks
        if self.cfg.scheduler == "tgi":
            batch = self._prefill_only(state, len(head) if head else 0)
            if batch is not None:
                return batch
        if head is None:
            if stuck_back is not None:  # the last iteration was stuck
                batch = self._after_stuck(state, *stuck_back, self._key,
                                          self.cfg.max_total_tokens)
                if batch is not None:
                    return batch
            jobs = self._admit(state)
        else:
            jobs = self._admit_after(state, head, idle_rest)
            if jobs is None:  # the held-back Generates come back, and nothing else
                no_free = state.kv.used_blocks >= state.kv.num_blocks
                done = short_step(state, head, self._key, self.cfg.max_total_tokens,
                                  self._short_tokens)
                if done is None:
                    self._idle_rest = None
                    if no_free:
                        batch = self._stuck_after_short(state, head, self._key,
                                                        self.cfg.max_total_tokens,
                                                        self._short_tokens)
                        if batch is not None:
                            return batch
                else:
                    decodes, short, self._short_tokens = done
                    if short:
                        self.memory_stalls += 1
                        self._unstable = True
                        self._short_head = short
                        self._repeatable = no_free
                    return Batch(decodes=decodes)
                jobs = [(s, 0) for s in reversed(head)]
        fill_n = {s.uid: n for s, n in jobs if n}
        key = self._key
        sorted_before = self._in_order
        in_order = sorted_before and _follow(state.running, jobs, key)
        ran_before = len(state.running)
        self._take(state, jobs)
        if in_order:
            pass
        elif sorted_before:  # running was in order: only the admitted jobs need placing
            merge_tail(state.running, ran_before, key)
        else:
            state.running.sort(key=key)
        self._in_order = True
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
        if not prefills and not decodes:  # stuck for memory: free some, run the oldest job
            return self._stuck_batch(state, key, fill_n, held)
        if held:  # every survivor ran otherwise: running stays as sorted
            ran = {s for s, _ in prefills}.union(decodes)
            back = [s for s in state.running if s not in ran]
            state.running = [s for s in state.running if s in ran]
            state.waiting.extendleft(back)  # one by one to the head, as the artifact preempts
        elif short:  # every survivor ran but those short of a block, which are in running order
            if prefills:
                out = set(short)
                state.running = [s for s in state.running if s not in out]
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
            if not is_ready(s):
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
        self._in_order = False  # the Fills run in queue order
        self._take(state, jobs)
        state.waiting.extendleft(reversed(gens))
        for s, n in jobs:
            s.allocate(kv, n)
        self._unstable = True
        return Batch(prefills=jobs)

    def repeated_decode_steps(self, state: EngineState, batch: Batch) -> int:
        """After a step without free blocks (:func:`short_step`): while no decode needs a new
        block or finishes, the next iterations find the same queue, the admission's memo
        hits, and the same step grows the same jobs (:func:`repeat_horizon`). ``tgi``'s
        prefill-only pass walks the queue each time: not repeated."""
        if not self._repeatable or self.cfg.scheduler == "tgi":
            return 1
        return repeat_horizon(batch.decodes, state.kv.block_size, self.cfg.max_total_tokens,
                              self._short_tokens)

    def on_repeated_step(self, state: EngineState) -> None:
        """A repeated iteration's decision counts what :meth:`schedule` would: the stalls of
        the admission's memo and one for the jobs still held back."""
        self.memory_stalls += self._idle_rest_stalls + 1

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
