"""vLLM 0.1.4's scheduler, as the paper's baseline ran it (FastChat ``vllm_worker``).

* FCFS; an iteration either fills prompts or decodes, never both (prefill-prioritized): while the
  head of the waiting queue fits (``can_allocate`` with a 1 % watermark, the
  ``max_num_batched_tokens`` budget, ``max_num_seqs``), it is admitted; if any prompt was admitted
  the iteration runs those prompts only, and emits each one's first token.
* Otherwise every running sequence decodes one token; a sequence that finds no free block
  preempts the newest running sequence (recompute: its blocks are freed and it goes back to the
  head of the waiting queue to refill prompt plus generated tokens).
* A waiting sequence longer than ``max_num_batched_tokens`` (vLLM's prompt limit, the smaller of
  it and ``max_model_len``, which the artifact raised to 65536) is not run: vLLM marks it
  FINISHED_IGNORED, takes it off the queue and ends the admission pass; its request returns
  with the tokens generated so far when the iteration ends. New prompts that long are rejected
  at dispatch (``limits``), so this is the sequence preempted by recompute whose prompt plus
  generated tokens outgrew the limit: without the rule it would block the queue for ever.
* ``capacity_tokens`` is the paper's ``VLLM_CAPACITY`` hack: the whole KV cache is capped at that
  many tokens and prompts longer than ``capacity - max_tokens - 100`` are truncated.
* ``request_tracking`` is the artifact's ``VLLM_REQ_TRACK=1`` (set by the run scripts of Figs 17,
  18 and 19): after each prefill iteration the worker decoded the prompt of every sequence of
  the batch with the LLaMA tokenizer, synchronously, before the next iteration. It costs
  :data:`REQUEST_TRACKING_S` per prompt and per prompt token, measured on this project's CPU by
  ``calibrate/tools/vllm_request_tracking.py`` (transformers 4.35 ``LlamaTokenizerFast``).
"""

from __future__ import annotations

from bisect import bisect_left
from typing import Literal

from pydantic import Field

from parrotsim.sim.model.admission import EngineLimits, truncated_prompt
from parrotsim.sim.model.engine_policy import (
    EnginePolicy,
    EnginePolicyConfig,
    EngineState,
    register_engine_policy,
)
from parrotsim.sim.model.front_door import FASTCHAT_ADMIT_WAITS, FASTCHAT_REPLY_WAITS
from parrotsim.sim.model.sequence import Batch, Sequence

#: (seconds per prompt, seconds per prompt token) of decoding the prompts of a prefill batch
REQUEST_TRACKING_S = (667e-6, 4.44e-6)


@register_engine_policy
class VllmConfig(EnginePolicyConfig):
    """Knobs of the vLLM 0.1.4 engine (defaults: the paper's FastChat launch flags)."""

    policy: Literal["vllm"] = "vllm"
    capacity_tokens: int | None = Field(default=None, gt=0)
    max_num_batched_tokens: int = Field(default=8000, gt=0)
    max_num_seqs: int = Field(default=256, gt=0)
    watermark: float = Field(default=0.01, ge=0, lt=1)
    request_tracking: bool = False
    #: FastChat 0.2.32's worker serves the HTTP calls of each request between iterations
    #: (:mod:`parrotsim.sim.model.front_door`: a call arriving at a busy engine is scheduled at
    #: the 6th iteration end, its answer leaves one iteration end after it finished)
    front_door: bool = False

    def kv_blocks(self, capacity_tokens: int, block_size: int) -> int:
        cap = capacity_tokens if self.capacity_tokens is None else self.capacity_tokens
        return max(0, cap // block_size)

    def limits(self, kv_blocks: int, block_size: int) -> EngineLimits:
        """A prompt is filled whole within ``max_num_batched_tokens``, above the watermark;
        the prefill emits the first token; ``capacity_tokens`` truncates long prompts."""
        return EngineLimits(kv_blocks, block_size, max_fill_tokens=self.max_num_batched_tokens,
                            fill_reserve_blocks=int(self.watermark * kv_blocks),
                            prompt_cap=self.capacity_tokens)

    def make(self) -> VllmPolicy:
        return VllmPolicy(self)


class VllmPolicy(EnginePolicy):
    """The decision logic of vLLM 0.1.4's ``Scheduler._schedule`` (see module docstring)."""

    prefill_emits_token = True

    def __init__(self, cfg: VllmConfig) -> None:
        self.cfg = cfg
        self._unsorted = False  # a re-admitted preempted sequence broke the FCFS order
        if cfg.front_door:
            self.front_door, self.reply_waits = True, FASTCHAT_REPLY_WAITS

    def front_door_waits(self, seq: Sequence) -> int:
        return FASTCHAT_ADMIT_WAITS

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
        if not state.waiting:
            return self._decode(state)
        kv, cfg = state.kv, self.cfg
        watermark = int(cfg.watermark * kv.num_blocks)
        prefills: list[tuple[Sequence, int]] = []
        ignored: tuple[Sequence, ...] = ()
        batched = 0
        while state.waiting:
            seq = state.waiting[0]
            if seq.prefix_ctx is not None and not seq.prefix_ctx.ready:
                break  # forks of a shared prefix wait until the prefix is filled
            n = seq.fill_target - seq.filled
            if self._over_limit(seq):  # FINISHED_IGNORED
                ignored = (state.waiting.popleft(),)
                break
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
            state.ledger.admit(seq, _fcfs(seq))  # decodes from the next decode step
            prefills.append((seq, n))
            batched += n
        if prefills:
            return Batch(prefills=prefills, ignored=ignored)
        batch = self._decode(state)
        batch.ignored = ignored
        return batch

    def _over_limit(self, seq: Sequence) -> bool:
        """Whether ``seq``'s fill exceeds vLLM's prompt limit (the token budget)."""
        return seq.fill_target - seq.filled > self.cfg.max_num_batched_tokens

    def _decode(self, state: EngineState) -> Batch:
        ledger = state.ledger
        if self._unsorted:
            state.running.sort(key=_fcfs)
            self._unsorted = False
        # Each sequence is checked for one free block before it appends its token, and only
        # those whose last block is full take one: if a block is still free after all of them
        # appended, no check failed and nobody is preempted. The ledger counts the blocks the
        # step takes without a pass over the batch.
        if ledger.try_step(keep_free=1):
            return Batch(decodes=state.running.copy(), ledger=ledger)
        return self._preempting_step(state)

    def _preempting_step(self, state: EngineState) -> Batch:
        """The decode step when the blocks run short, as vLLM takes it: in FCFS order each
        sequence checks for one free block before it appends its slot; when none is free the
        newest sequence not yet served is preempted (the sequence itself when none is left).
        Only a sequence whose last block is full takes a block, so the walk jumps from one
        such sequence (the ledger lists them) to the next and touches only them and the
        victims; the survivors then take the step together."""
        ledger, kv, running = state.ledger, state.kv, state.running
        takers = [bisect_left(running, _fcfs(s), key=_fcfs) for s in ledger.block_takers()]
        served, end, t = 0, len(running), 0  # running[served:end] are neither served nor victims
        taken = 0  # blocks the served sequences take (allocated after the walk)
        peak = kv.used_blocks
        while served < end:
            if kv.free_blocks - taken < 1:
                while kv.free_blocks - taken < 1 and end - 1 > served:
                    end -= 1
                    self._preempt(state, running[end])
                if kv.free_blocks - taken < 1:  # nobody left to preempt: the sequence itself
                    end -= 1
                    self._preempt(state, running[end])
                    break
            if t == len(takers) or takers[t] >= end:  # the rest take no block
                break
            served = takers[t] + 1  # those before it take none; it takes the free block
            t += 1
            taken += 1
            peak = max(peak, kv.used_blocks + taken)
        state.running = running[:end]
        if ledger.force_step() != taken:
            raise RuntimeError("decode ledger out of step with the running sequences")
        if peak > kv.peak_blocks:
            kv.peak_blocks = peak
        return Batch(decodes=state.running.copy(), ledger=ledger)

    @staticmethod
    def _preempt(state: EngineState, seq: Sequence) -> None:
        """Preemption by recompute: ``seq`` goes back to the head of the waiting queue."""
        state.ledger.leave(seq)
        seq.preempt(state.kv)
        state.waiting.appendleft(seq)

    def stable_decode_steps(self, state: EngineState, batch: Batch) -> int:
        if batch.prefills or not batch.decodes:
            return 1
        if state.waiting and self._over_limit(state.waiting[0]):
            return 1  # the next step ignores it
        ledger = state.ledger  # the batch's decodes are its members
        return ledger.steps_within(ledger.horizon(), keep_free=1)


def _fcfs(seq: Sequence) -> tuple:
    return (seq.arrived, seq.uid)
