"""FastChat's HuggingFace Transformers worker (``model_worker``): one request at a time.

The worker runs ``generate`` for one request until its last token before taking the next, FIFO;
there is no batching and no paged memory. Its per-iteration cost comes from the profile's ``hf``
runtime (eager PyTorch is slower per step than vLLM: about 29 ms vs 21 ms per decode step for
LLaMA-13B on an A100 in the paper's logs).
"""

from __future__ import annotations

from typing import ClassVar, Literal

from parrotsim.sim.model.admission import EngineLimits
from parrotsim.sim.model.engine_policy import (
    EnginePolicy,
    EnginePolicyConfig,
    EngineState,
    register_engine_policy,
)
from parrotsim.sim.model.sequence import Batch


@register_engine_policy
class HfConfig(EnginePolicyConfig):
    """The HF worker has no knobs the paper changed."""

    policy: Literal["hf"] = "hf"
    runtime: ClassVar[str] = "hf"

    def limits(self, kv_blocks: int, block_size: int) -> EngineLimits:
        """A request's prompt and output are allocated when it starts."""
        return EngineLimits(kv_blocks, block_size, whole_call=True)

    def make(self) -> HfPolicy:
        return HfPolicy()


class HfPolicy(EnginePolicy):
    """Serve the head of the queue alone: fill its prompt, then decode until it finishes."""

    prefill_emits_token = True

    def schedule(self, state: EngineState) -> Batch:
        if not state.running:
            if not state.waiting:
                return Batch()
            seq = state.waiting[0]
            kv = state.kv
            if kv.blocks_for(seq.fill_target + seq.output_len) > kv.free_blocks:
                return Batch()
            state.waiting.popleft()
            seq.ctx = kv.create()
            kv.grow(seq.ctx, seq.fill_target)
            state.running.append(seq)
            return Batch(prefills=[(seq, seq.fill_target)])
        seq = state.running[0]
        seq.allocate(state.kv, 1)
        return Batch(decodes=[seq])

    def stable_decode_steps(self, state: EngineState, batch: Batch) -> int:
        if batch.prefills or not batch.decodes:
            return 1
        return batch.decodes[0].remaining
