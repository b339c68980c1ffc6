"""What the end of an iteration does to its sequences: prompt chunks filled, tokens emitted,
sequences finished. One definition serves the SimPy engine and the real GPU executor
(``calibrate/replay``), so both apply the same semantics to the same policy's batches.

Times are in seconds. A prompt chunk advances ``filled``; the first stamps ``admitted`` (the
iteration's start); the chunk that completes the prompt stamps ``last_fill`` and, when the
engine's prefill emits a token, emits one. Every decoding sequence emits one token per step
(the first at ``first_end``). A sequence that reaches its output length finishes at the end of
the work: the caller's ``finish`` decides what else that means (callbacks, prefix bookkeeping).
"""

from __future__ import annotations

from collections.abc import Callable

from parrotsim.sim.model.decode_ledger import DecodeLedger
from parrotsim.sim.model.engine_policy import EngineState
from parrotsim.sim.model.kv_cache import KVCache
from parrotsim.sim.model.sequence import Batch, Sequence

#: called as ``finish(seq, end)`` when ``seq`` produced its last token at ``end``
Finish = Callable[[Sequence, float], None]


def end_prefill_iteration(batch: Batch, start: float, end: float, emits_token: bool,
                          finish: Finish, prefix_filled: Finish) -> None:
    """The effects of one prompt-filling iteration of ``batch`` from ``start`` to ``end``;
    ``prefix_filled(seq, end)`` takes a completed shared-prefix fill (``seq.fill_of``)."""
    for seq, n in batch.prefills:
        seq.filled += n
        if seq.admitted < 0:
            seq.admitted = start
        if seq.filled == seq.fill_target:
            seq.last_fill = end
            if seq.fill_of is not None:
                prefix_filled(seq, end)
            elif emits_token:
                emit_token(seq, end, finish)
    for seq in batch.decodes:  # emit_token, inlined: a mixed batch may hold ~100 decodes
        if seq.first_token < 0:
            seq.first_token = end
        seq.generated += 1
        if seq.generated >= seq.output_len:
            finish(seq, end)


def end_decode_stretch(kv: KVCache, batch: Batch, steps: int, first_end: float, end: float,
                       finish: Finish) -> None:
    """The effects of ``steps`` identical decode-only iterations of ``batch`` (the first
    already allocated by the policy; the others grow every context here), the first ending at
    ``first_end`` and the last at ``end``; sequences finish after all have emitted."""
    decodes = batch.decodes
    extra = steps - 1
    bs = kv.block_size
    if extra and kv.used_blocks + len(decodes) * -(-extra // bs) > kv.num_blocks:
        kv.grow_each([s.ctx for s in decodes], extra)  # tight: checked first (raises if short)
        extra = 0
    # One pass: grow each context by the stretch's other steps (the bound above shows the
    # blocks suffice), stamp first tokens, count generated tokens.
    used = kv.used_blocks
    done = []
    for seq in decodes:
        if extra:
            ctx = seq.ctx
            n = ctx.tokens + extra
            ctx.tokens = n
            need = -(-n // bs)
            used += need - ctx.blocks
            ctx.blocks = need
        if seq.first_token < 0:
            seq.first_token = first_end
        seq.generated += steps
        if seq.generated >= seq.output_len:
            done.append(seq)
    if used != kv.used_blocks:
        kv.used_blocks = used
        if used > kv.peak_blocks:
            kv.peak_blocks = used
    for seq in done:
        finish(seq, end)


def end_ledger_stretch(ledger: DecodeLedger, steps: int, first_end: float, end: float,
                       finish: Finish) -> None:
    """:func:`end_decode_stretch` for a batch whose decodes are ``ledger``'s members, without
    a pass over them: the ledger allocates the other steps and emits in closed form; only the
    members that reach their output length are touched (finished in the batch's order)."""
    ledger.advance(steps - 1)
    for seq in ledger.emit(steps, first_end):
        finish(seq, end)


def emit_token(seq: Sequence, end: float, finish: Finish) -> None:
    """``seq`` emits one token at ``end`` (finishing it at its output length)."""
    if seq.first_token < 0:
        seq.first_token = end
    seq.generated += 1
    if seq.generated >= seq.output_len:
        finish(seq, end)


def release(state: EngineState, seq: Sequence, end: float) -> None:
    """A finished sequence leaves ``running`` and frees its own KV blocks."""
    seq.finished = end
    state.running.remove(seq)
    seq.free(state.kv)
