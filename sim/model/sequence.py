"""A call's state while it lives on an engine, and the batch an iteration runs.

A :class:`Sequence` counts tokens: ``prompt_len`` prompt tokens of which ``cached_len`` are
already in the KV cache through a forked prefix context (so they are never filled), ``filled``
tokens of ``fill_target`` computed so far, ``generated`` output tokens out of ``output_len``.
``fill_target`` is the prompt length, or prompt plus generated tokens after a preemption by
recompute. The KV context ``ctx`` holds the sequence's own tokens; attention reads those plus the
cached prefix.

A sequence serves either a call (``request``, the call's record) or, with ``fill_of`` set, the
fill of a shared prefix into an engine's prefix cache: a helper that generates nothing.

While a sequence decodes as a member of its engine's :class:`~parrotsim.sim.model.decode_ledger.DecodeLedger`
(``ledger_id >= 0``), its ``ctx.tokens``, ``ctx.blocks`` and ``generated`` may lag behind: the
ledger writes them back when the sequence leaves it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from parrotsim.sim.model.kv_cache import Context, KVCache
from parrotsim.sim.model.request import CallInfo

if TYPE_CHECKING:
    from parrotsim.sim.model.decode_ledger import DecodeLedger
    from parrotsim.sim.model.prefix_cache import PrefixEntry


class Sequence:
    """One call being served by an engine (times in simulated seconds)."""

    __slots__ = (
        "uid", "app_id", "call", "order", "prompt_len", "cached_len", "output_len",
        "fill_target", "filled", "generated", "ctx", "prefix_ctx", "max_requests", "arrived", "admitted",
        "first_token", "finished", "preemptions", "request", "fill_of", "engine_id", "last_fill",
        "fill_breaks", "waiting_inputs", "ledger_id", "tok_base", "gen_base",
    )

    def __init__(self, uid: int, app_id: str, call: str, prompt_len: int, output_len: int,
                 order: tuple = (), cached_len: int = 0, prefix_ctx: Context | None = None,
                 max_requests: int | None = None, request: CallInfo | None = None,
                 fill_of: PrefixEntry | None = None,
                 fill_breaks: tuple[int, ...] = ()) -> None:
        self.uid = uid
        self.app_id = app_id
        self.call = call
        self.order = order or (uid,)
        self.prompt_len = prompt_len
        self.cached_len = cached_len
        self.output_len = output_len
        self.fill_target = prompt_len
        self.filled = cached_len
        self.generated = 0
        self.ctx: Context | None = None
        self.prefix_ctx = prefix_ctx
        self.max_requests = max_requests
        self.arrived = -1.0
        self.admitted = -1.0
        self.first_token = -1.0
        self.last_fill = -1.0  # end of the latest iteration that completed the prompt
        self.waiting_inputs = 0  # producers still running (Parrot's pipelined dispatch)
        self.finished = -1.0
        self.preemptions = 0
        self.request = request
        self.fill_of = fill_of
        self.fill_breaks = fill_breaks  # prompt positions where a fill job ends
        self.engine_id = -1
        # membership of the engine's decode ledger (-1: none) and the ledger's step counters
        # ``ctx.tokens`` and ``generated`` were last brought up to date at
        self.ledger_id = -1
        self.tok_base = 0
        self.gen_base = 0

    @property
    def to_fill(self) -> int:
        """Prompt tokens (plus recomputed output tokens) still to be filled."""
        return self.fill_target - self.filled

    @property
    def kv_tokens(self) -> int:
        """Tokens in this sequence's KV (cached prefix included); what its attention reads."""
        return self.cached_len + (self.ctx.tokens if self.ctx is not None else 0)

    @property
    def remaining(self) -> int:
        """Output tokens still to generate."""
        return self.output_len - self.generated

    # ---- KV verbs: what a policy or the engine does to a sequence's memory ----------------
    def allocate(self, kv: KVCache, tokens: int) -> None:
        """Room for ``tokens`` more tokens; a sequence without KV first gets its context,
        forked from its cached prefix when it has one (raises ``MemoryError`` when the blocks
        run out: callers check first)."""
        if self.ctx is None:
            self.ctx = kv.create(self.prefix_ctx)
        kv.grow(self.ctx, tokens)

    def free(self, kv: KVCache) -> None:
        """Return the sequence's own blocks (a forked prefix keeps its other users' blocks)."""
        kv.release(self.ctx)
        self.ctx = None

    def preempt(self, kv: KVCache) -> None:
        """Preemption by recompute: free the sequence's own KV; it must fill its prompt and the
        tokens it has generated again (a forked prefix stays cached)."""
        self.free(kv)
        self.filled = self.cached_len
        self.fill_target = self.prompt_len + self.generated
        self.preemptions += 1

    def __repr__(self) -> str:
        return (f"Sequence({self.app_id}/{self.call}, prompt={self.prompt_len}, "
                f"filled={self.filled}, gen={self.generated}/{self.output_len})")


@dataclass(slots=True)
class Batch:
    """What one iteration runs: prompt chunks to fill and sequences that decode one token."""

    prefills: list[tuple[Sequence, int]] = field(default_factory=list)
    decodes: list[Sequence] = field(default_factory=list)
    #: set when ``decodes`` are exactly the members of this ledger, their step allocated
    ledger: DecodeLedger | None = None
    #: waiting sequences the policy gave up on (vLLM 0.1.4's FINISHED_IGNORED): they end with
    #: the tokens they have, when this iteration ends (at once if it runs nothing)
    ignored: tuple[Sequence, ...] = ()

    @property
    def empty(self) -> bool:
        return not self.prefills and not self.decodes

    @property
    def num_tokens(self) -> int:
        """Tokens processed by the linear layers this iteration."""
        return sum(n for _, n in self.prefills) + len(self.decodes)
