"""The cascade's prefix phase over a prefix stored in consecutive pages, read by tensor descriptors.

The shipped prefix tile (:mod:`parrotsim.kernels.prefix_tile`) reads each [BN, D] tile of the
shared prefix through the page table: one load of page ids, then a gather whose addresses depend
on it. When the prefix's pages are consecutive (a prefix filled once into a fresh pool, or
compacted after its fill), token t of KV head h is row ``first_page * 16 + t`` of the cache viewed
as [pages * 16, Hkv * D], columns ``h*D .. h*D+D-1``; a tensor descriptor over those rows lets
the compiler issue the tile as one bulk copy (TMA on Hopper) and pipeline it without the page-id
round trip. Rows past the prefix's end are outside the descriptor and read as zeros.

Same output as :func:`parrotsim.kernels.prefix_tile.prefix_tile` (partial state per split: fp32
o normalised, log2 LSE), so :func:`shared_prefix_contiguous` composes it with the shipped suffix
phase and merge exactly as mode "concurrent"/"separate" does.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor

from parrotsim.kernels._common import INTERPRET, LOG2E, default_scale
from parrotsim.kernels.experimental.attend_desc import attend_desc, store_partial
from parrotsim.kernels.paged_decode import choose_num_splits, launch_decode, launch_merge
from parrotsim.kernels.shared_prefix_decode import run_phases


@triton.jit
def _prefix_desc_kernel(
    q_ptr, k_desc, v_desc, po_ptr, plse_ptr, prefix_len, split_len, qk_scale, n_rows, HQ,
    n_slots, stride_qb, stride_qh,
    G: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, D: tl.constexpr, F32: tl.constexpr,
):
    rb = tl.program_id(0)
    kvh = tl.program_id(1)
    split = tl.program_id(2)
    rows = rb * BM + tl.arange(0, BM)
    rmask = rows < n_rows
    seq = rows // G
    heads = kvh * G + rows % G
    offs_d = tl.arange(0, D)
    q = tl.load(q_ptr + seq[:, None] * stride_qb + heads[:, None] * stride_qh + offs_d[None, :],
                mask=rmask[:, None], other=0.0)
    start = split * split_len
    end = tl.minimum(start + split_len, prefix_len)
    m_i, l_i, acc = attend_desc(q, k_desc, v_desc, 0, start, end, kvh * D, qk_scale, BM, BN, D,
                                F32)
    store_partial(po_ptr, plse_ptr, (seq * HQ + heads).to(tl.int64) * n_slots + split, m_i, l_i,
                  acc, rmask, D)


def split_tokens(prefix_len: int, splits: int, block_n: int) -> int:
    """Tokens per prefix split: ``prefix_len / splits`` rounded up to whole ``block_n`` tiles."""
    per_split = -(-prefix_len // splits)
    return -(-per_split // block_n) * block_n


def prefix_descriptors(k_cache: torch.Tensor, v_cache: torch.Tensor, first_page: int,
                       prefix_len: int, block_n: int) -> tuple[TensorDescriptor, TensorDescriptor]:
    """Descriptors over the prefix rows [prefix_len, Hkv * D] of K and V (pages consecutive
    from ``first_page``), tiles of [block_n, D]."""
    pages, page, hkv, d = k_cache.shape
    lo = first_page * page

    def desc(cache: torch.Tensor) -> TensorDescriptor:
        rows = cache.view(pages * page, hkv * d)[lo:lo + prefix_len]
        return TensorDescriptor.from_tensor(rows, [block_n, d])
    return desc(k_cache), desc(v_cache)


def launch_prefix_desc(q: torch.Tensor, descs: tuple[TensorDescriptor, TensorDescriptor],
                       prefix_len: int, po: torch.Tensor, plse: torch.Tensor, hkv: int,
                       scale2: float, block_m: int, block_n: int, split_len: int, splits: int,
                       num_warps: int, num_stages: int) -> None:
    """The prefix phase: partial states of every (sequence, query head) over each of ``splits``
    splits of ``split_len`` tokens (a multiple of ``block_n``) into slots ``0..splits-1``."""
    b, hq, d = q.shape
    g = hq // hkv
    _prefix_desc_kernel[(-(-(b * g) // block_m), hkv, splits)](
        q, *descs, po, plse, prefix_len, split_len, scale2, b * g, hq, po.shape[2],
        q.stride(0), q.stride(1), G=g, BM=block_m, BN=block_n, D=d, F32=INTERPRET,
        num_warps=num_warps, num_stages=num_stages)


def shared_prefix_contiguous(
    q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor, first_page: int,
    prefix_len: int, suffix_block_tables: torch.Tensor, suffix_lens: torch.Tensor,
    block_m: int = 128, block_n: int = 64, num_warps: int = 8, num_stages: int = 3,
    prefix_splits: int | None = None, suffix_splits: int | None = None,
    concurrent: bool = True, sm_scale: float | None = None,
    suffix_tile: tuple[int, int, int] = (128, 4, 2), suffix_first: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Shared-prefix decode attention (same arguments and result as
    :func:`parrotsim.kernels.shared_prefix_decode.shared_prefix_decode_attention`, the prefix
    given by its first page, its pages consecutive): the descriptor prefix phase, the shipped
    split-KV suffix phase (on a second stream when ``concurrent``), the log-sum-exp merge.
    ``prefix_splits`` default: one wave of programs over the SMs. ``suffix_tile``: the suffix
    phase's (tokens per tile, warps, stages); ``suffix_first``: with ``concurrent``, the suffix
    phase is launched first (on the side stream), so its programs take the SMs first."""
    b, hq, d = q.shape
    hkv = k_cache.shape[2]
    g = hq // hkv
    scale2 = default_scale(d, sm_scale) * LOG2E
    progs = -(-(b * g) // block_m) * hkv
    if prefix_splits is None:
        sms = torch.cuda.get_device_properties(q.device).multi_processor_count \
            if q.is_cuda else 8
        prefix_splits = max(1, sms // progs)
    split_len = split_tokens(prefix_len, prefix_splits, block_n)
    nsp = -(-prefix_len // split_len)
    nss = suffix_splits or choose_num_splits(b * hkv, suffix_block_tables.shape[1] * 16,
                                             q.device)
    po = torch.empty(b, hq, nsp + nss, d, dtype=torch.float32, device=q.device)
    plse = torch.empty(b, hq, nsp + nss, dtype=torch.float32, device=q.device)
    out = torch.empty_like(q)
    lse = torch.empty(b, hq, dtype=torch.float32, device=q.device)
    descs = prefix_descriptors(k_cache, v_cache, first_page, prefix_len, block_n)

    def prefix() -> None:
        launch_prefix_desc(q, descs, prefix_len, po, plse, hkv, scale2, block_m, block_n,
                           split_len, nsp, num_warps, num_stages)

    def suffix() -> None:
        bn_s, warps_s, stages_s = suffix_tile
        launch_decode(q, k_cache, v_cache, suffix_block_tables, suffix_lens, scale2 / LOG2E,
                      nss, None, None, po, plse, slot0=nsp, block_n=bn_s, num_warps=warps_s,
                      num_stages=stages_s)

    if suffix_first:  # the phases write disjoint slots: either may go on the side stream
        run_phases(suffix, prefix, q, concurrent)
    else:
        run_phases(prefix, suffix, q, concurrent)
    launch_merge(po, plse, out, lse, num_warps=1)
    return out, lse


__all__ = ["launch_prefix_desc", "prefix_descriptors", "shared_prefix_contiguous",
           "split_tokens"]
