"""The vLLM engine policy as it was before the decode ledger (commit 15fffa3 of
``policies/engine/vllm.py``, its decision logic verbatim, with the one-pass decode step
``append_token_each`` it used from ``sim/model/sequence.py``): the oracle that
``test_vllm_ledger_equivalence`` compares the shipped policy with. Its batches carry no ledger,
so the engine runs them through its per-sequence paths."""

from __future__ import annotations

from parrotsim.policies.engine.kv_horizon import steps_within_blocks
from parrotsim.policies.engine.vllm import REQUEST_TRACKING_S, VllmConfig
from parrotsim.sim.model.admission import truncated_prompt
from parrotsim.sim.model.engine_policy import EnginePolicy, EngineState
from parrotsim.sim.model.kv_cache import KVCache
from parrotsim.sim.model.sequence import Batch, Sequence


def append_token_each(kv: KVCache, seqs: list[Sequence], keep_free: int) -> int | None:
    """Give every sequence (each holding a context) the slot of its next output token, if that
    leaves at least ``keep_free`` blocks free: the batched form of ``allocate(kv, 1)`` a decode
    step does, in one pass. Returns the fewest output tokens any of them still has to generate
    (counting the one allocated), or None, changing nothing, when the blocks do not suffice."""
    bs = kv.block_size
    used = kv.used_blocks
    horizon = None
    for seq in seqs:  # optimistic: grow, and undo in the rare case the pool runs short
        ctx = seq.ctx
        n = ctx.tokens + 1
        ctx.tokens = n
        need = -(-n // bs)
        used += need - ctx.blocks
        ctx.blocks = need
        left = seq.output_len - seq.generated
        if horizon is None or left < horizon:
            horizon = left
    if used <= kv.num_blocks - keep_free:
        kv.used_blocks = used
        if used > kv.peak_blocks:
            kv.peak_blocks = used
        return horizon
    for seq in seqs:
        ctx = seq.ctx
        ctx.tokens -= 1
        ctx.blocks = -(-ctx.tokens // bs)
    return None


class ReferenceVllmPolicy(EnginePolicy):
    """vLLM 0.1.4's scheduler, one pass over the running sequences per decode step."""

    prefill_emits_token = True

    def __init__(self, cfg: VllmConfig) -> None:
        self.cfg = cfg
        self._unsorted = False  # a re-admitted preempted sequence broke the FCFS order
        # the decode list last returned and the fewest tokens any of its sequences had left
        self._decoded: list[Sequence] | None = None
        self._horizon = 0

    def accept(self, seq: Sequence) -> None:
        prompt = truncated_prompt(seq.prompt_len, seq.output_len, self.cfg.capacity_tokens)
        if prompt != seq.prompt_len:
            seq.prompt_len = seq.fill_target = prompt

    def host_time(self, batch: Batch) -> float:
        if not self.cfg.request_tracking or not batch.prefills:
            return 0.0
        per_prompt, per_token = REQUEST_TRACKING_S
        return (per_prompt * len(batch.prefills)
                + per_token * sum([seq.prompt_len for seq, _ in batch.prefills]))

    def schedule(self, state: EngineState) -> Batch:
        self._decoded = None
        if not state.waiting:
            return Batch(decodes=self._decode(state))
        kv, cfg = state.kv, self.cfg
        watermark = int(cfg.watermark * kv.num_blocks)
        prefills: list[tuple[Sequence, int]] = []
        batched = 0
        while state.waiting:
            seq = state.waiting[0]
            if seq.prefix_ctx is not None and not seq.prefix_ctx.ready:
                break  # forks of a shared prefix wait until the prefix is filled
            n = seq.fill_target - seq.filled
            if kv.free_blocks - kv.blocks_for(n) < watermark:
                break
            if batched + n > cfg.max_num_batched_tokens:
                break
            if len(state.running) + 1 > cfg.max_num_seqs:
                break
            state.waiting.popleft()
            seq.allocate(kv, n)
            if state.running and _fcfs(seq) < _fcfs(state.running[-1]):
                self._unsorted = True
            state.running.append(seq)
            prefills.append((seq, n))
            batched += n
        if prefills:
            return Batch(prefills=prefills)
        return Batch(decodes=self._decode(state))

    def _decode(self, state: EngineState) -> list[Sequence]:
        kv = state.kv
        if self._unsorted:
            state.running.sort(key=_fcfs)
            self._unsorted = False
        seqs = state.running
        # Each sequence is checked for one free block before it appends its token, and only
        # those whose last block is full take one: if a block is still free after all of them
        # appended, no check failed and nobody is preempted.
        horizon = append_token_each(kv, seqs, keep_free=1)
        if horizon is not None:
            self._decoded, self._horizon = seqs.copy(), horizon
            return self._decoded
        queue = list(state.running)
        running: list[Sequence] = []
        while queue:
            seq = queue.pop(0)
            while kv.free_blocks < 1:
                victim = queue.pop() if queue else seq
                victim.preempt(kv)
                state.waiting.appendleft(victim)
                if victim is seq:
                    break
            else:
                kv.grow(seq.ctx, 1)
                running.append(seq)
        state.running = running
        return list(running)

    def stable_decode_steps(self, state: EngineState, batch: Batch) -> int:
        if batch.prefills or not batch.decodes:
            return 1
        if batch.decodes is self._decoded:  # found by the pass that allocated the step
            horizon = self._horizon
        else:
            horizon = min([s.output_len - s.generated for s in batch.decodes])
        return steps_within_blocks(batch.decodes, state.kv.free_blocks, state.kv.block_size,
                                   horizon)


def _fcfs(seq: Sequence) -> tuple:
    return (seq.arrived, seq.uid)
