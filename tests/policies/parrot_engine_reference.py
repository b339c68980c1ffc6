"""The Parrot engine scheduler as it was before its incremental rewrite (commit 6a6e6c9 of
``policies/engine/parrot.py``, verbatim): the oracle that ``test_parrot_engine_equivalence``
compares the shipped policy's decisions with, on random small states."""

from __future__ import annotations

from parrotsim.policies.engine.kv_horizon import steps_within_blocks
from parrotsim.policies.engine.parrot import ParrotEngineConfig
from parrotsim.sim.model.engine_policy import EnginePolicy, EngineState
from parrotsim.sim.model.sequence import Batch, Sequence


def _ready(seq: Sequence) -> bool:
    """Whether a sequence may start: its inputs are complete (a call dispatched early, in the
    artifact's pipelined mode, waits for its producers) and it has no prefix, or its prefix
    fill has completed."""
    if seq.ctx is not None:
        return True
    if seq.waiting_inputs:
        return False
    return seq.prefix_ctx is None or getattr(seq.prefix_ctx, "ready", True)


class ReferenceParrotEnginePolicy(EnginePolicy):
    """The decision logic of Parrot's engine scheduler, one full walk per decision."""

    prefill_emits_token = False

    def __init__(self, cfg: ParrotEngineConfig) -> None:
        self.cfg = cfg
        self._parked: set[int] = set()  # uids waiting for their prefix context
        self._held: set[int] = set()  # uids the last walk held back
        self._unstable = False  # the last iteration held back for memory or preempted

    # ---- helpers -------------------------------------------------------------------------
    def _key(self, seq: Sequence) -> tuple:
        if self.cfg.scheduler == "fifo_v2":
            return seq.order
        return (seq.arrived, seq.uid)

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

    def _release_parked(self, state: EngineState) -> None:
        """Forked calls whose prefix became ready (and calls whose inputs completed) join the
        waiting tail."""
        ready = [s for s in state.waiting if s.uid in self._parked and _ready(s)]
        for s in ready:
            state.waiting.remove(s)
            self._parked.discard(s.uid)
        state.waiting.extend(ready)

    def _admit(self, state: EngineState, dry: bool = False) -> list[tuple[Sequence, int]]:
        """FIFO admission: (sequence, tokens) per admitted job (tokens 0 for a Generate)."""
        cfg = self.cfg
        jobs = batched = len(state.running)
        free = state.kv.free_blocks
        fills_blocked = False
        out: list[tuple[Sequence, int]] = []
        for s in state.waiting:
            if not _ready(s):
                if not dry:
                    self._parked.add(s.uid)
                continue
            n = self._fill_tokens(s) if s.to_fill > 0 else 0
            if jobs + 1 > cfg.max_batch_size or (
                    jobs and batched + max(n, 1) > cfg.max_num_batched_tokens):
                break
            if n:
                need = self._fill_blocks(state, s, n)
                if fills_blocked or need > free:
                    if not dry and not fills_blocked:
                        self.memory_stalls += 1
                    fills_blocked = True
                    continue
                free -= need
            out.append((s, n))
            jobs += 1
            batched += max(n, 1)
        return out

    def _take(self, state: EngineState, jobs: list[tuple[Sequence, int]]) -> None:
        taken = {s.uid for s, _ in jobs}
        waiting = state.waiting
        while waiting and taken and waiting[0].uid in taken:  # usually a prefix of the queue
            taken.discard(waiting.popleft().uid)
        if taken:
            kept = [s for s in waiting if s.uid not in taken]
            waiting.clear()
            waiting.extend(kept)
        state.running.extend(s for s, _ in jobs)

    # ---- scheduling ----------------------------------------------------------------------
    def schedule(self, state: EngineState) -> Batch:
        if self._parked:
            self._release_parked(state)
        self._held, self._unstable = set(), False
        if self.cfg.scheduler == "tgi":
            batch = self._prefill_only(state)
            if batch is not None:
                return batch
        jobs = self._admit(state)
        fill_n = {s.uid: n for s, n in jobs if n}
        self._take(state, jobs)
        state.running.sort(key=self._key)
        limit = self.cfg.max_total_tokens
        total, survivors, held = 0, [], []
        for s in state.running:
            c = s.kv_tokens
            if held or (limit is not None and survivors and total + c > limit):
                held.append(s)
            else:
                survivors.append(s)
                total += c
        kv = state.kv
        prefills = []
        for s in survivors:
            if s.uid in fill_n:
                s.allocate(kv, fill_n[s.uid])
                prefills.append((s, fill_n[s.uid]))
        decodes, short = [], []
        for s in survivors:
            if s.uid in fill_n:
                continue
            if s.ctx is None:  # a fork whose whole prompt is cached
                s.ctx = kv.create(s.prefix_ctx)
            if kv.can_grow(s.ctx, 1):
                kv.grow(s.ctx, 1)
                decodes.append(s)
            else:
                short.append(s)
        self._unstable = bool(short) or any(s.uid in fill_n for s in held)
        if short:
            self.memory_stalls += 1
        if not prefills and not decodes:  # stuck for memory: free some, run the oldest job
            cands = [s for s in (*state.running, *state.waiting) if _ready(s)]
            if cands:
                self._unstable = True
                prefills, decodes = self._unstick(state, min(cands, key=self._key), fill_n)
        ran = {id(s) for s, _ in prefills} | {id(s) for s in decodes}
        back = [s for s in state.running if id(s) not in ran]
        state.running = [s for s in state.running if id(s) in ran]
        state.waiting.extendleft(back)  # one by one to the head, as the artifact preempts
        self._held = {s.uid for s in held}
        return Batch(prefills=prefills, decodes=decodes)

    def _prefill_only(self, state: EngineState) -> Batch | None:
        """tgi: Fills from the waiting queue in order; running Generates go back to the head."""
        kv, cfg = state.kv, self.cfg
        free, tokens = kv.free_blocks, 0
        jobs: list[tuple[Sequence, int]] = []
        for s in state.waiting:
            if s.to_fill == 0:
                continue
            if not _ready(s):
                self._parked.add(s.uid)
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
        if {s.uid for s, _ in self._admit(state, dry=True)} != self._held:
            return 1  # the next iteration would admit other jobs
        decodes = batch.decodes
        steps = min(s.remaining for s in decodes)
        limit = self.cfg.max_total_tokens
        if limit is not None and len(decodes) > 1:
            before = sum(s.kv_tokens - 1 for s in decodes)  # the lengths this walk used
            steps = min(steps, (limit - before) // len(decodes) + 1)
        steps = steps_within_blocks(decodes, state.kv.free_blocks, state.kv.block_size, steps)
        return max(1, steps)
