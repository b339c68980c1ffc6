"""Replay chunks to a :class:`parrotsim.kernels.llama_batch.ForwardBatch`, vectorized.

The same tensors as :func:`parrotsim.kernels.llama_batch.build_batch` (a test checks it), built
with numpy instead of a Python loop per token (a prompt of 8000 tokens costs ~3 ms of host
time in that loop). Decode rows can be padded to ``pad_to`` rows with dummy sequences of one
token on the ``scratch`` page (for CUDA graphs of fixed batch sizes); their outputs are
ignored and their KV writes land on the scratch page only. With ``shared_pages`` = n > 0 every
decode row's table starts with the same n pages (one forked prefix, read once by the
shared-prefix kernel); padding rows then fork that prefix too (their one token on the scratch
page, at position ``16 n``) so the kernel sees a uniform batch.
"""

from __future__ import annotations

import numpy as np
import torch

from parrotsim.calibrate.replay.chunks import Chunk
from parrotsim.kernels.llama_batch import PAGE_SIZE, ForwardBatch


def _tables(chunks: list[Chunk], width: int, rows: int, scratch: int,
            shared_pages: int = 0) -> np.ndarray:
    t = np.zeros((rows, width), dtype=np.int32)
    for i, c in enumerate(chunks):
        t[i, :len(c.table)] = c.table
    if shared_pages:
        t[len(chunks):, :shared_pages] = chunks[0].table[:shared_pages] if chunks else scratch
    t[len(chunks):, shared_pages] = scratch
    return t


def to_forward_batch(prefills: list[Chunk], decodes: list[Chunk], device: torch.device | str,
                     table_width: int | None = None, pad_to: int = 0,
                     scratch: int = 0, shared_pages: int = 0) -> ForwardBatch:
    """The forward batch of ``prefills`` then ``decodes`` (decode tables padded to
    ``table_width`` pages, decode rows to ``pad_to``; ``shared_pages``: see module)."""
    dev = torch.device(device)
    nd = max(len(decodes), pad_to if decodes or pad_to else 0)
    ids, pos, slots = [], [], []
    q_lens = [len(c.token_ids) for c in prefills]
    for c in prefills:
        p = np.arange(c.ctx_len, c.ctx_len + len(c.token_ids), dtype=np.int64)
        tab = np.asarray(c.table, dtype=np.int64)
        ids.append(np.asarray(c.token_ids, dtype=np.int64))
        pos.append(p)
        slots.append(tab[p // PAGE_SIZE] * PAGE_SIZE + p % PAGE_SIZE)
    if nd:
        width = table_width or max(len(c.table) for c in decodes)
        dtab = _tables(decodes, width, nd, scratch, shared_pages)
        dpos = np.full(nd, shared_pages * PAGE_SIZE, dtype=np.int64)
        dpos[:len(decodes)] = [c.ctx_len for c in decodes]
        did = np.zeros(nd, dtype=np.int64)
        did[:len(decodes)] = [int(c.token_ids[0]) for c in decodes]
        ids.append(did)
        pos.append(dpos)
        slots.append(dtab[np.arange(nd), dpos // PAGE_SIZE].astype(np.int64) * PAGE_SIZE
                     + dpos % PAGE_SIZE)
    tp = sum(q_lens)
    last = np.concatenate([np.cumsum(q_lens, dtype=np.int64) - 1,
                           tp + np.arange(nd, dtype=np.int64)])

    def put(a: np.ndarray) -> torch.Tensor:
        return torch.from_numpy(np.ascontiguousarray(a)).to(dev)

    batch = ForwardBatch(input_ids=put(np.concatenate(ids)), positions=put(np.concatenate(pos)),
                         slot_mapping=put(np.concatenate(slots)), logits_index=put(last))
    if prefills:
        batch.num_prefill_tokens = tp
        batch.prefill_cu_q = put(np.concatenate([[0], np.cumsum(q_lens)]).astype(np.int32))
        batch.prefill_ctx_lens = put(np.array([c.ctx_len for c in prefills], dtype=np.int32))
        batch.prefill_block_tables = put(_tables(prefills, max(len(c.table) for c in prefills),
                                                 len(prefills), scratch))
        batch.prefill_max_q = max(q_lens)
        batch.prefill_q_lens = q_lens
        batch.prefill_no_context = all(c.ctx_len == 0 for c in prefills)
    if nd:
        batch.num_decode = nd
        batch.decode_block_tables = put(dtab)
        batch.decode_seq_lens = put((dpos + 1).astype(np.int32))
        batch.num_shared_pages = shared_pages
    return batch


def to_grouped_forward_batch(prefills: list[Chunk], groups: list[tuple[int, list[Chunk]]],
                             plain: list[Chunk], device: torch.device | str, table_width: int,
                             scratch: int, group_rows: list[int] | None = None,
                             plain_rows: int = 0) -> ForwardBatch:
    """The forward batch of ``prefills`` then decodes that fork several prefixes: ``groups``
    as ``(prefix pages, decodes whose tables start with those pages)``, then ``plain`` decodes
    (their whole context read by the paged kernel). Group ``i`` is padded to
    ``group_rows[i]`` rows (dummy rows fork its prefix: one token on the ``scratch`` page) and
    the plain rows to ``plain_rows`` (one token on ``scratch``), so a CUDA graph captured for
    those row counts and prefix sizes serves any batch of the same shape."""
    rows = group_rows or [len(c) for _, c in groups]
    decodes: list[Chunk] = []
    layout = []
    lead = np.zeros(1, dtype=np.int64)
    for (pages, chunks), n in zip(groups, rows, strict=True):
        if len(chunks) > n:
            raise ValueError(f"{len(chunks)} decodes in a group padded to {n} rows")
        prefix = chunks[0].table[:pages]
        layout.append((len(decodes), n, pages))
        decodes += chunks
        decodes += [Chunk(lead, pages * PAGE_SIZE, [*prefix, scratch])] * (n - len(chunks))
    decodes += plain
    decodes += [Chunk(lead, 0, [scratch])] * max(0, plain_rows - len(plain))
    batch = to_forward_batch(prefills, decodes, device, table_width, 0, scratch)
    width = table_width
    tables = np.zeros((len(decodes), width), dtype=np.int32)
    lens = np.array([c.ctx_len + 1 for c in decodes], dtype=np.int32)
    grouped = 0
    for first, n, pages in layout:
        for i in range(first, first + n):
            own = decodes[i].table[pages:]
            tables[i, :len(own)] = own
        lens[first:first + n] -= pages * PAGE_SIZE
        grouped = first + n
    for i in range(grouped, len(decodes)):
        tables[i, :len(decodes[i].table)] = decodes[i].table
    dev = torch.device(device)
    batch.prefix_groups = tuple(layout)
    batch.decode_suffix_tables = torch.from_numpy(tables).to(dev)
    batch.decode_suffix_lens = torch.from_numpy(lens).to(dev)
    return batch
