"""What an engine batching policy sees and decides.

An engine holds a FIFO ``waiting`` queue and a ``running`` list of :class:`~sim.sequence.Sequence`
plus its :class:`~sim.kv_cache.KVCache`. Each iteration the engine asks its policy for a
:class:`~sim.sequence.Batch`; the policy admits, allocates KV, preempts and picks work, mutating
the plain-Python state but never touching time. That keeps policies testable on hand-built
states. ``stable_decode_steps`` tells the engine how many identical decode-only iterations follow,
so it can fast-forward them in one event.
"""

from __future__ import annotations

from collections import deque
from typing import ClassVar, TypeVar

from sim.kv_cache import KVCache
from sim.sequence import Batch, Sequence
from workloads.registry import StrictConfig


class EngineState:
    """The mutable state of one engine that policies act on."""

    __slots__ = ("waiting", "running", "kv")

    def __init__(self, kv: KVCache) -> None:
        self.waiting: deque[Sequence] = deque()
        self.running: list[Sequence] = []
        self.kv = kv


class EnginePolicy:
    """Base class of engine batching policies."""

    #: whether the iteration that completes a prompt also emits the first output token
    prefill_emits_token: ClassVar[bool] = True
    #: times the policy had to hold work back or recompute for lack of KV blocks where the real
    #: engine had no such check (Parrot's engine crashed: the report marks such runs as out of
    #: memory); policies whose real engine handles it (vLLM's preemption) leave it at 0
    memory_stalls: int = 0

    def accept(self, seq: Sequence) -> None:
        """Called when ``seq`` arrives at the engine, before it joins the waiting queue."""

    def schedule(self, state: EngineState) -> Batch:
        """Choose the next iteration's work (may admit, allocate and preempt)."""
        raise NotImplementedError

    def stable_decode_steps(self, state: EngineState, batch: Batch) -> int:
        """How many decode-only iterations, starting with ``batch`` (already allocated), run
        with the same sequences if nothing arrives: at least 1."""
        return 1


class EnginePolicyConfig(StrictConfig):
    """Config of an engine policy; ``policy`` is the tag the YAML uses."""

    policy: str
    runtime: ClassVar[str] = "vllm"

    def kv_blocks(self, capacity_tokens: int, block_size: int) -> int:
        """Blocks of the engine's KV cache given the memory left after weights (tokens)."""
        return max(1, capacity_tokens // block_size)

    def make(self) -> EnginePolicy:
        raise NotImplementedError


ENGINE_POLICIES: dict[str, type[EnginePolicyConfig]] = {}
C = TypeVar("C", bound=type[EnginePolicyConfig])


def register_engine_policy(cls: C) -> C:
    """Class decorator: make an engine policy config available under its ``policy`` tag."""
    tag = cls.model_fields["policy"].default
    if not isinstance(tag, str) or tag in ENGINE_POLICIES:
        raise ValueError(f"engine policy {tag!r} missing or registered twice")
    ENGINE_POLICIES[tag] = cls
    return cls


def steps_within_blocks(decodes: list[Sequence], free_blocks: int, block_size: int,
                        max_steps: int) -> int:
    """Decode steps (the first already allocated) the KV cache allows before any of ``decodes``
    could be short of a block: the largest ``s <= max_steps`` such that growing every context
    by ``s - 1`` more tokens still leaves one block free (vLLM's ``can_append_slot`` test)."""
    if max_steps <= 1 or free_blocks < 1:
        return 1
    # Each context takes at most ceil((max_steps - 1) / block_size) more blocks: usually that
    # bound fits and no per-context work is needed.
    if len(decodes) * -(-(max_steps - 1) // block_size) + 1 <= free_blocks:
        return max_steps
    # A context with r free slots in its last block takes ceil((e - r) / block_size) new blocks
    # to grow by e > r tokens: count the contexts by r once, then each evaluation is O(block_size).
    by_slack = [0] * block_size
    for s in decodes:
        by_slack[-s.ctx.tokens % block_size] += 1
    slack_counts = [(r, n) for r, n in enumerate(by_slack) if n]

    def need(extra: int) -> int:
        return sum([n * -((r - extra) // block_size) for r, n in slack_counts if extra > r])

    if need(max_steps - 1) + 1 <= free_blocks:
        return max_steps
    lo, hi = 0, max_steps - 1  # need(lo) fits, need(hi) does not
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if need(mid) + 1 <= free_blocks:
            lo = mid
        else:
            hi = mid
    return lo + 1
