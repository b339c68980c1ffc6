"""A policy's :class:`~parrotsim.sim.model.sequence.Batch` as the forward pass's work items.

After ``schedule()`` the KV cache already counts the batch's new tokens: a prefill ``(seq, n)``
fills positions ``seq.filled .. seq.filled + n - 1`` (``seq.filled`` counts a forked prefix's
cached tokens too), and a decode sequence grew by the one token it processes now, at position
``seq.kv_tokens - 1``. Each :class:`Chunk` carries those positions' token ids (random ids of
the right length: values do not change the work) and the sequence's block table from the
:class:`~parrotsim.calibrate.replay.pages.PageAllocator`, in the layout of
:class:`parrotsim.kernels.llama_batch.SeqChunk` (prefill chunks first, then decodes).

The kernels address position ``p`` as page ``table[p // 16]``. A forked parent is padded to a
block boundary (the simulator's rule, and Parrot's), so a child's own tokens start on a fresh
page: the kernels see them at positions shifted by the parent's padding, and attend over the
(< 16 per level) padding slots as if they were context. That costs the same as the real
positions to within those few slots; values never matter (random weights and ids).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from parrotsim.calibrate.replay.pages import PageAllocator
from parrotsim.sim.model.sequence import Batch, Sequence


@dataclass(slots=True)
class Chunk:
    """New tokens of one sequence: ``token_ids`` at positions ``ctx_len ..``; ``table`` holds
    pages for ``ctx_len + len(token_ids)`` tokens."""

    token_ids: np.ndarray
    ctx_len: int
    table: list[int]


class TokenIds:
    """Random token ids, served as slices of one pre-drawn pool (no per-token work)."""

    def __init__(self, vocab: int, seed: int = 0, size: int = 1 << 16) -> None:
        self.pool = np.random.default_rng(seed).integers(0, vocab, size=2 * size,
                                                         dtype=np.int64)
        self.size, self.at = size, 0

    def take(self, n: int) -> np.ndarray:
        if n > self.size:
            return np.resize(self.pool, n)
        a = self.at
        self.at = (a + n) % self.size
        return self.pool[a:a + n]


def batch_chunks(batch: Batch, pages: PageAllocator, ids: TokenIds,
                 page_size: int) -> tuple[list[Chunk], list[Chunk]]:
    """(prefill chunks, decode chunks) of ``batch``; ``pages`` must be synced already."""
    prefills = []
    for seq, n in batch.prefills:
        table, pad = _layout(seq, pages, page_size)
        prefills.append(Chunk(ids.take(n), seq.filled + pad, table))
    decodes = []
    for seq in batch.decodes:
        table, pad = _layout(seq, pages, page_size)
        decodes.append(Chunk(ids.take(1), seq.kv_tokens - 1 + pad, table))
    return prefills, decodes


def _layout(seq: Sequence, pages: PageAllocator, page_size: int) -> tuple[list[int], int]:
    """The sequence's block table and the padding slots of its forked ancestors."""
    table = pages.table(seq.ctx)
    parent = seq.ctx.parent
    pad = 0 if parent is None else len(pages.table(parent)) * page_size - seq.ctx.prefix_tokens
    if len(table) * page_size < seq.kv_tokens + pad:
        raise RuntimeError(f"{seq}: {len(table)} pages for {seq.kv_tokens} tokens")
    return table, pad
