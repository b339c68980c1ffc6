"""Split-KV decode over sequences whose pages are consecutive, read by tensor descriptors.

A diagnostic for issue 18's "never slower than torch SDPA on a contiguous gather": SDPA reads
each sequence's K/V as one contiguous run, the paged kernel (:mod:`parrotsim.kernels.paged_decode`)
through a page table. This kernel is the paged kernel's tile (G query heads of one KV head as the
rows of a ``tl.dot``, online softmax, split-KV, the shipped log-sum-exp merge) with the page
table replaced by one descriptor over the cache viewed as [pages * 16, Hkv * D]: sequence b's
token t is row ``first_page[b] * 16 + t``. Whatever it gains over the paged kernel at the same
shape is what the page gather costs. The same kernel with ``PAGES`` > 0 reads through a page
table instead, one copy per page (:mod:`.paged_desc`).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor

from parrotsim.kernels._common import INTERPRET, LOG2E, default_scale
from parrotsim.kernels.experimental.attend_desc import attend_desc, store_partial
from parrotsim.kernels.paged_decode import choose_num_splits, launch_merge


@triton.jit
def _decode_desc_kernel(
    q_ptr, k_desc, v_desc, pages_ptr, lens_ptr, po_ptr, plse_ptr, qk_scale, HQ, n_slots,
    stride_qb, stride_qh, stride_pages, n_pages, NUM_SPLITS,
    G: tl.constexpr, BLOCK_H: tl.constexpr, BN: tl.constexpr, D: tl.constexpr,
    PAGE: tl.constexpr, F32: tl.constexpr, PAGES: tl.constexpr,
):
    """One program per (sequence, KV head, split). ``PAGES`` = 0: ``pages_ptr`` holds each
    sequence's first page (its pages are consecutive); else it is the page table (rows of
    ``stride_pages``, ``n_pages`` entries) and a BN = PAGES * PAGE tile is PAGES copies."""
    b = tl.program_id(0)
    kvh = tl.program_id(1)
    split = tl.program_id(2)
    seq_len = tl.load(lens_ptr + b)
    split_len = tl.cdiv(tl.cdiv(seq_len, NUM_SPLITS), BN) * BN
    start = split * split_len
    end = tl.minimum(start + split_len, seq_len)
    offs_h = tl.arange(0, BLOCK_H)
    offs_d = tl.arange(0, D)
    hmask = offs_h < G
    heads = kvh * G + offs_h
    q = tl.load(q_ptr + b * stride_qb + heads[:, None] * stride_qh + offs_d[None, :],
                mask=hmask[:, None], other=0.0)
    if PAGES == 0:
        m_i, l_i, acc = attend_desc(q, k_desc, v_desc, tl.load(pages_ptr + b) * PAGE, start,
                                    end, kvh * D, qk_scale, BLOCK_H, BN, D, F32)
    else:
        m_i, l_i, acc = attend_desc(q, k_desc, v_desc, 0, start, end, kvh * D, qk_scale,
                                    BLOCK_H, BN, D, F32, pages_ptr + b.to(tl.int64) * stride_pages,
                                    n_pages, PAGES, PAGE)
    store_partial(po_ptr, plse_ptr, (b * HQ + heads).to(tl.int64) * n_slots + split, m_i, l_i,
                  acc, hmask, D)


def launch_decode_desc(q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor,
                       pages: torch.Tensor, seq_lens: torch.Tensor, max_len: int,
                       num_splits: int | None, block_n: int, pages_per_tile: int,
                       num_warps: int, num_stages: int, sm_scale: float | None
                       ) -> tuple[torch.Tensor, torch.Tensor]:
    """Run :func:`_decode_desc_kernel` and the shipped merge; ``pages`` is int32 [B] first pages
    (``pages_per_tile`` 0, tiles of ``block_n`` rows) or the [B, max pages] page table (tiles of
    ``pages_per_tile`` pages). Returns (out [B, Hq, D], natural-log lse [B, Hq])."""
    b, hq, d = q.shape
    n_cache, page, hkv, _ = k_cache.shape
    g = hq // hkv
    splits = num_splits or choose_num_splits(b * hkv, max_len, q.device)
    box = block_n if pages_per_tile == 0 else page
    descs = [TensorDescriptor.from_tensor(c.view(n_cache * page, hkv * d), [box, d])
             for c in (k_cache, v_cache)]
    table = pages_per_tile > 0
    if pages.dim() != (2 if table else 1):
        raise ValueError(f"pages of shape {tuple(pages.shape)}: a [B] first-page vector "
                         f"without pages_per_tile, a [B, max pages] table with it")
    po = torch.empty(b, hq, splits, d, dtype=torch.float32, device=q.device)
    plse = torch.empty(b, hq, splits, dtype=torch.float32, device=q.device)
    _decode_desc_kernel[(b, hkv, splits)](
        q, *descs, pages, seq_lens, po, plse, default_scale(d, sm_scale) * LOG2E, hq, splits,
        q.stride(0), q.stride(1), pages.stride(0) if table else 0,
        pages.shape[1] if table else 0, splits, G=g,
        BLOCK_H=max(16, triton.next_power_of_2(g)),
        BN=block_n if pages_per_tile == 0 else pages_per_tile * page, D=d, PAGE=page,
        F32=INTERPRET, PAGES=pages_per_tile, num_warps=num_warps, num_stages=num_stages)
    out = torch.empty_like(q)
    lse = torch.empty(b, hq, dtype=torch.float32, device=q.device)
    launch_merge(po, plse, out, lse)
    return out, lse


def decode_contiguous(q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor,
                      first_pages: torch.Tensor, seq_lens: torch.Tensor, max_len: int,
                      num_splits: int | None = None, block_n: int = 64, num_warps: int = 4,
                      num_stages: int = 3, sm_scale: float | None = None
                      ) -> tuple[torch.Tensor, torch.Tensor]:
    """Decode attention of one query per sequence; sequence b's ``seq_lens[b]`` tokens are in
    consecutive pages from ``first_pages[b]`` (int32 [B]). Returns (out [B, Hq, D], natural-log
    lse [B, Hq]) as :func:`parrotsim.kernels.paged_decode.paged_decode_attention` does. Rows
    past a sequence's end belong to other sequences and are masked; the last rows of the cache
    read as zeros."""
    return launch_decode_desc(q, k_cache, v_cache, first_pages, seq_lens, max_len, num_splits,
                              block_n, 0, num_warps, num_stages, sm_scale)


__all__ = ["decode_contiguous", "launch_decode_desc"]
