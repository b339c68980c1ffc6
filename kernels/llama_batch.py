"""Batches for :class:`parrotsim.kernels.llama.LlamaModel`: mixed prefill chunks and decode tokens.

A batch lists prefill chunks first, then decode sequences (one new token each). Each sequence
brings its block table (page ids of the paged KV cache, 16 tokens a page) and ``ctx_len``, the
number of its tokens already in the cache; its new tokens go to positions ``ctx_len ..``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

PAGE_SIZE = 16


@dataclass
class SeqChunk:
    """New tokens of one sequence: ``token_ids`` at positions ``ctx_len ..``; ``block_table``
    must hold pages for ``ctx_len + len(token_ids)`` tokens."""

    token_ids: list[int]
    ctx_len: int
    block_table: list[int]


@dataclass
class ForwardBatch:
    """Device tensors of one forward call (build with :func:`build_batch`).

    Token-level: ``input_ids``/``positions``/``slot_mapping`` [T] int64, prefill tokens first.
    Prefill: ``prefill_cu_q`` int32 [Np+1], ``prefill_ctx_lens`` int32 [Np],
    ``prefill_block_tables`` int32 [Np, W]. Decode: ``decode_block_tables`` int32 [Nd, W],
    ``decode_seq_lens`` int32 [Nd] (tokens including the new one). ``num_shared_pages``: leading
    pages that all decode block tables share (used by ``decode_attention="shared_prefix"``).
    ``prefix_groups``: instead, decode rows ``first .. first + rows - 1`` fork a prefix of
    ``pages`` pages (the leading pages of their tables), as ``(first, rows, pages)``; with them
    ``decode_suffix_tables`` int32 [Nd, W] / ``decode_suffix_lens`` int32 [Nd] hold each grouped
    row's pages and tokens after its prefix (any other row: its whole table), for
    :func:`parrotsim.kernels.grouped_prefix_decode.grouped_shared_prefix_decode_attention`.
    ``logits_index`` [Np+Nd]: rows of the hidden state that get logits (last token of each).
    """

    input_ids: torch.Tensor
    positions: torch.Tensor
    slot_mapping: torch.Tensor
    logits_index: torch.Tensor
    num_prefill_tokens: int = 0
    prefill_cu_q: torch.Tensor | None = None
    prefill_ctx_lens: torch.Tensor | None = None
    prefill_block_tables: torch.Tensor | None = None
    prefill_max_q: int = 0
    prefill_q_lens: list[int] = field(default_factory=list)
    prefill_no_context: bool = True
    decode_block_tables: torch.Tensor | None = None
    decode_seq_lens: torch.Tensor | None = None
    num_decode: int = 0
    num_shared_pages: int = 0
    prefix_groups: tuple[tuple[int, int, int], ...] = ()
    decode_suffix_tables: torch.Tensor | None = None
    decode_suffix_lens: torch.Tensor | None = None
    grouped_plan: object | None = None  # the several-prefix kernel's plan, made at layer 0

    @property
    def num_tokens(self) -> int:
        """Total new tokens T."""
        return self.input_ids.shape[0]


def _table(rows: list[list[int]], width: int | None, device: torch.device) -> torch.Tensor:
    w = max([len(r) for r in rows] + [1]) if width is None else width
    t = torch.zeros(len(rows), w, dtype=torch.int32)
    for i, r in enumerate(rows):
        t[i, :len(r)] = torch.tensor(r, dtype=torch.int32)
    return t.to(device)


def build_batch(prefills: list[SeqChunk], decodes: list[SeqChunk], device: torch.device | str,
                num_shared_pages: int = 0, table_width: int | None = None) -> ForwardBatch:
    """Build a :class:`ForwardBatch` (host-side work; one copy per tensor to ``device``).

    ``table_width`` pads decode block tables to a fixed width (CUDA graphs need fixed shapes).
    """
    device = torch.device(device)
    ids, pos, slots, last = [], [], [], []
    for c in prefills + decodes:
        for i, tok in enumerate(c.token_ids):
            p = c.ctx_len + i
            ids.append(tok)
            pos.append(p)
            slots.append(c.block_table[p // PAGE_SIZE] * PAGE_SIZE + p % PAGE_SIZE)
        last.append(len(ids) - 1)
    for c in decodes:
        assert len(c.token_ids) == 1, "decode sequences take exactly one new token"
    as_long = lambda x: torch.tensor(x, dtype=torch.int64).to(device)  # noqa: E731
    batch = ForwardBatch(input_ids=as_long(ids), positions=as_long(pos),
                         slot_mapping=as_long(slots), logits_index=as_long(last),
                         num_shared_pages=num_shared_pages)
    if prefills:
        q_lens = [len(c.token_ids) for c in prefills]
        cu = [0]
        for n in q_lens:
            cu.append(cu[-1] + n)
        batch.num_prefill_tokens = cu[-1]
        batch.prefill_cu_q = torch.tensor(cu, dtype=torch.int32).to(device)
        batch.prefill_ctx_lens = torch.tensor([c.ctx_len for c in prefills],
                                              dtype=torch.int32).to(device)
        batch.prefill_block_tables = _table([c.block_table for c in prefills], None, device)
        batch.prefill_max_q = max(q_lens)
        batch.prefill_q_lens = q_lens
        batch.prefill_no_context = all(c.ctx_len == 0 for c in prefills)
    if decodes:
        batch.num_decode = len(decodes)
        batch.decode_block_tables = _table([c.block_table for c in decodes], table_width, device)
        batch.decode_seq_lens = torch.tensor([c.ctx_len + 1 for c in decodes],
                                             dtype=torch.int32).to(device)
    return batch


class PagePool:
    """Free list of KV-cache page ids (host side)."""

    def __init__(self, num_pages: int) -> None:
        self.free = list(range(num_pages - 1, -1, -1))

    def alloc(self, num_tokens: int) -> list[int]:
        """Pages for ``num_tokens`` tokens (raises if the pool is exhausted)."""
        n = -(-num_tokens // PAGE_SIZE)
        if n > len(self.free):
            raise MemoryError(f"KV cache full: need {n} pages, {len(self.free)} free")
        return [self.free.pop() for _ in range(n)]

    def release(self, pages: list[int]) -> None:
        """Return pages to the pool."""
        self.free.extend(reversed(pages))
