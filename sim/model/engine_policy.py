"""What an engine batching policy sees and decides.

An engine holds a FIFO ``waiting`` queue and a ``running`` list of :class:`~parrotsim.sim.model.sequence.Sequence`
plus its :class:`~parrotsim.sim.model.kv_cache.KVCache`. Each iteration the engine asks its policy for a
:class:`~parrotsim.sim.model.sequence.Batch`; the policy admits, allocates KV, preempts and picks work, mutating
the plain-Python state but never touching time. That keeps policies testable on hand-built
states. ``on_iteration_end`` tells it what the iteration did; ``stable_decode_steps`` tells the
engine how many identical decode-only iterations follow, so it can fast-forward them in one
event; ``repeated_decode_steps``, how many the policy would decide alike where their times must
still be stepped (one event each, without asking the policy again).
"""

from __future__ import annotations

from collections import deque
from typing import ClassVar

from parrotsim.core.config import StrictConfig
from parrotsim.core.registry import Registry
from parrotsim.sim.model.admission import EngineLimits
from parrotsim.sim.model.decode_ledger import DecodeLedger
from parrotsim.sim.model.kv_cache import KVCache
from parrotsim.sim.model.sequence import Batch, Sequence


class EngineState:
    """The mutable state of one engine that policies act on; ``ledger`` accounts the running
    sequences a policy decodes in lockstep (``eager``: their counters kept up to date after
    every step, for callers that read them between iterations)."""

    __slots__ = ("waiting", "running", "kv", "ledger")

    def __init__(self, kv: KVCache, eager: bool = True) -> None:
        self.waiting: deque[Sequence] = deque()
        self.running: list[Sequence] = []
        self.kv = kv
        self.ledger = DecodeLedger(kv, eager)


class EnginePolicy:
    """Base class of engine batching policies."""

    #: whether the iteration that completes a prompt also emits the first output token
    prefill_emits_token: ClassVar[bool] = True
    #: times the policy had to hold work back or recompute for lack of KV blocks where the real
    #: engine had no such check (Parrot's engine crashed: the report marks such runs as out of
    #: memory); policies whose real engine handles it (vLLM's preemption) leave it at 0
    memory_stalls: int = 0
    #: whether calls enter through a front end served between iterations
    #: (:mod:`parrotsim.sim.model.front_door`); then :meth:`front_door_waits` says how many
    #: iteration ends past the first a call arriving at a busy engine waits for, and
    #: ``reply_waits`` how many pass between the iteration that finishes a call and its answer
    front_door: bool = False
    reply_waits: int = 0

    def front_door_waits(self, seq: Sequence) -> int:
        """Iteration ends past the first that ``seq``'s calls wait for at a busy engine."""
        return 0

    def accept(self, seq: Sequence) -> None:
        """Called when ``seq`` arrives at the engine, before it joins the waiting queue."""

    def schedule(self, state: EngineState) -> Batch:
        """Choose the next iteration's work (may admit, allocate and preempt)."""
        raise NotImplementedError

    def host_time(self, batch: Batch) -> float:
        """Seconds of host (CPU) work the engine software does on the engine's thread around a
        prompt-filling iteration of ``batch``, beyond what the cost profile measured (added to
        the iteration's duration)."""
        return 0.0

    def on_iteration_end(self, state: EngineState, batch: Batch, steps: int,
                         finished: list[Sequence]) -> None:
        """Called when ``batch`` has run (``steps`` identical iterations for a decode stretch)
        and its tokens are emitted: ``finished`` sequences have left ``running`` and freed
        their KV. The engine's next request is :meth:`schedule`."""

    def stable_decode_steps(self, state: EngineState, batch: Batch) -> int:
        """How many decode-only iterations, starting with ``batch`` (already allocated), run
        with the same sequences if nothing arrives: at least 1."""
        return 1

    def repeated_decode_steps(self, state: EngineState, batch: Batch) -> int:
        """For a decode-only ``batch`` that :meth:`stable_decode_steps` could not fast-forward:
        how many iterations in all, this one first, :meth:`schedule` would decide the same
        (the same decodes in the same order, each taking its next token's slot within its
        blocks, none finishing before the last, and the same bookkeeping) if nothing outside
        the engine acted: at least 1. The engine then runs them one event each, timed as
        stepping times them, without calling :meth:`schedule` for the others; one
        :meth:`on_iteration_end` reports them all at the end."""
        return 1

    def on_repeated_step(self, state: EngineState) -> None:
        """The bookkeeping of a :meth:`schedule` call the engine skipped for a repeated
        iteration (see :meth:`repeated_decode_steps`), e.g. counters it would have moved."""


class EnginePolicyConfig(StrictConfig):
    """Config of an engine policy; ``policy`` is the tag the YAML uses."""

    policy: str
    runtime: ClassVar[str] = "vllm"

    def kv_blocks(self, capacity_tokens: int, block_size: int) -> int:
        """Blocks of the engine's KV cache given the memory left after weights (tokens); 0
        when not even one block fits (the run's config is then rejected)."""
        return max(0, capacity_tokens // block_size)

    def limits(self, kv_blocks: int, block_size: int) -> EngineLimits:
        """What an engine of this policy can ever hold, for the admission check
        (:mod:`parrotsim.sim.model.admission`); by default its KV cache alone."""
        return EngineLimits(kv_blocks, block_size)

    def make(self) -> EnginePolicy:
        raise NotImplementedError


ENGINE_POLICIES = Registry("engine policy", "policy")
#: class decorator: make an engine policy config available under its ``policy`` tag
register_engine_policy = ENGINE_POLICIES.register
