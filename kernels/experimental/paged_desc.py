"""Split-KV paged decode whose K/V pages are read by tensor descriptors, one page a copy.

The follow-up to :mod:`.decode_desc` (session 11): over consecutive pages, one bulk copy per
tile took the paged tile from 83-87 % to 92-98 % of the bytes floor at G = 4 (B >= 100, P >=
3000), so the page gather is what the paged kernel loses there. A real page table has no
consecutive runs to rely on, so this kernel keeps the table and replaces only the gather: each
tile of ``PAGES`` pages (``PAGES * 16`` tokens) is ``PAGES`` bulk copies of one 16-token page,
at row ``page_id * 16`` of the cache viewed as [pages * 16, Hkv * D], joined into one [BN, D]
tile for the ``tl.dot`` (:func:`.attend_desc.page_rows`). Tile rows, online softmax, splits and
the merge are those of :mod:`parrotsim.kernels.paged_decode`. ``PAGES`` is 1, 2 or 4.

Measured on the H200 (``kernels/results/session11``): one page a copy is the best tile and takes
0.97-1.29x the shipped kernel's time; four pages joined in registers about 3x. Kept for the
benchmark, not used by the model.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor

from parrotsim.kernels._common import INTERPRET, LOG2E, default_scale
from parrotsim.kernels.experimental.attend_desc import attend_desc, store_partial
from parrotsim.kernels.paged_decode import PAGE_SIZE, choose_num_splits, launch_merge


@triton.jit
def _paged_desc_kernel(
    q_ptr, k_desc, v_desc, bt_ptr, lens_ptr, po_ptr, plse_ptr, qk_scale, HQ, n_slots,
    stride_qb, stride_qh, stride_bt, n_pages, NUM_SPLITS,
    G: tl.constexpr, BLOCK_H: tl.constexpr, PAGES: tl.constexpr, D: tl.constexpr,
    PAGE: tl.constexpr, F32: tl.constexpr,
):
    b = tl.program_id(0)
    kvh = tl.program_id(1)
    split = tl.program_id(2)
    BN: tl.constexpr = PAGES * PAGE
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
    m_i, l_i, acc = attend_desc(q, k_desc, v_desc, 0, start, end, kvh * D, qk_scale, BLOCK_H,
                                BN, D, F32, bt_ptr + b.to(tl.int64) * stride_bt, n_pages, PAGES,
                                PAGE)
    store_partial(po_ptr, plse_ptr, (b * HQ + heads).to(tl.int64) * n_slots + split, m_i, l_i,
                  acc, hmask, D)


def paged_decode_desc(q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor,
                      block_tables: torch.Tensor, seq_lens: torch.Tensor, max_len: int,
                      num_splits: int | None = None, pages_per_tile: int = 4,
                      num_warps: int = 4, num_stages: int = 3, sm_scale: float | None = None
                      ) -> tuple[torch.Tensor, torch.Tensor]:
    """Decode attention of one query per sequence over paged K/V (``k_cache`` [pages, 16, Hkv,
    D], ``block_tables`` int32 [B, max pages]); returns (out [B, Hq, D], natural-log lse [B, Hq])
    as :func:`parrotsim.kernels.paged_decode.paged_decode_attention` does."""
    if pages_per_tile not in (1, 2, 4):
        raise ValueError(f"pages_per_tile must be 1, 2 or 4, not {pages_per_tile}")
    b, hq, d = q.shape
    pages, page, hkv, _ = k_cache.shape
    assert page == PAGE_SIZE
    splits = num_splits or choose_num_splits(b * hkv, max_len, q.device)
    descs = [TensorDescriptor.from_tensor(c.view(pages * page, hkv * d), [page, d])
             for c in (k_cache, v_cache)]
    po = torch.empty(b, hq, splits, d, dtype=torch.float32, device=q.device)
    plse = torch.empty(b, hq, splits, dtype=torch.float32, device=q.device)
    _paged_desc_kernel[(b, hkv, splits)](
        q, *descs, block_tables, seq_lens, po, plse, default_scale(d, sm_scale) * LOG2E, hq,
        splits, q.stride(0), q.stride(1), block_tables.stride(0), block_tables.shape[1],
        splits, G=hq // hkv, BLOCK_H=max(16, triton.next_power_of_2(hq // hkv)),
        PAGES=pages_per_tile, D=d, PAGE=page, F32=INTERPRET, num_warps=num_warps,
        num_stages=num_stages)
    out = torch.empty_like(q)
    lse = torch.empty(b, hq, dtype=torch.float32, device=q.device)
    launch_merge(po, plse, out, lse)
    return out, lse


__all__ = ["paged_decode_desc"]
