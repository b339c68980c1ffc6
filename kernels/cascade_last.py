"""Shared-prefix decode in one launch: prefix tiles, suffix tiles and the merge by the last finisher.

Mode ``"fused_last"`` of :func:`parrotsim.kernels.shared_prefix_decode.shared_prefix_decode_attention`.
One grid holds the prefix programs first (row block x KV head x prefix split, each a
:func:`~parrotsim.kernels.prefix_tile.prefix_tile`; the longest programs start first) and then
the suffix programs (sequence x KV head x suffix split, each a
:func:`~parrotsim.kernels.decode_tile.decode_tile`), as mode "fused" does; instead of a merge
launch, every program counts the (sequence, query head) rows it wrote and the last of the
``NSP + NSS`` programs of a row merges it (:func:`~parrotsim.kernels.last_merge.merge_if_last`).
Against "concurrent" (the default for B*G > 32) it saves the merge launch and the stream
fork/join; it loses the separate tile configurations of the two phases (one ``num_warps``).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from parrotsim.kernels._common import INTERPRET
from parrotsim.kernels.decode_tile import decode_tile
from parrotsim.kernels.last_merge import _block_s, counters, merge_if_last
from parrotsim.kernels.prefix_tile import prefix_tile
from parrotsim.kernels.prefix_tile_fast import prefix_tile_fast


# shape-dependent counts are not specialised (one compile per tile, not per batch shape)
@triton.jit(do_not_specialize=["prefix_len", "split_len", "n_rows", "B", "n_slots", "RB",
                               "n_prefix_progs", "NSP", "NSS"])
def _cascade_last_kernel(
    q_ptr, k_ptr, v_ptr, pages_ptr, prefix_len, sbt_ptr, slens_ptr, po_ptr, plse_ptr, cnt_ptr,
    out_ptr, lse_ptr, split_len, qk_scale, n_rows, B, HQ, HKV, n_slots, RB, n_prefix_progs,
    stride_qb, stride_qh, stride_kp, stride_kt, stride_kh, stride_vp, stride_vt, stride_vh,
    stride_btb, stride_ob, stride_oh, NSP, NSS, G: tl.constexpr, BM: tl.constexpr,
    BN: tl.constexpr, BLOCK_H: tl.constexpr, BN_S: tl.constexpr, D: tl.constexpr,
    PAGE: tl.constexpr, F32: tl.constexpr, BLOCK_S: tl.constexpr, FAST: tl.constexpr,
):
    pid = tl.program_id(0)
    if pid < n_prefix_progs:
        rb = pid % RB
        rest = pid // RB
        kvh = rest % HKV
        if FAST:
            prefix_tile_fast(q_ptr, k_ptr, v_ptr, pages_ptr, prefix_len, po_ptr, plse_ptr,
                             rb, kvh, rest // HKV, split_len, qk_scale, n_rows, HQ,
                             n_slots, stride_qb, stride_qh, stride_kp, stride_kt, stride_kh,
                             stride_vp, stride_vt, stride_vh, G, BM, BN, D, PAGE, F32)
        else:
            prefix_tile(q_ptr, k_ptr, v_ptr, pages_ptr, prefix_len, po_ptr, plse_ptr,
                        rb, kvh, rest // HKV, split_len, qk_scale, n_rows, HQ,
                        n_slots, stride_qb, stride_qh, stride_kp, stride_kt, stride_kh,
                        stride_vp, stride_vt, stride_vh, G, BM, BN, D, PAGE, F32)
        rows = rb * BM + tl.arange(0, BM)
        merge_if_last(po_ptr, plse_ptr, cnt_ptr, out_ptr, lse_ptr, rows // G,
                      kvh * G + rows % G, rows < n_rows, HQ, n_slots, NSP + NSS,
                      stride_ob, stride_oh, D, BLOCK_S)
    else:
        j = pid - n_prefix_progs
        b = j % B
        rest = j // B
        kvh = rest % HKV
        split = rest // HKV
        decode_tile(q_ptr, k_ptr, v_ptr, sbt_ptr, slens_ptr, po_ptr, plse_ptr, po_ptr, plse_ptr,
                    b, kvh, split, NSP + split, qk_scale, HQ, n_slots,
                    stride_qb, stride_qh, stride_kp, stride_kt, stride_kh,
                    stride_vp, stride_vt, stride_vh, stride_btb, 0, 0,
                    NSS, 0, 0, G, BLOCK_H, BN_S, D, PAGE, False, F32, False)
        offs_h = tl.arange(0, BLOCK_H)
        merge_if_last(po_ptr, plse_ptr, cnt_ptr, out_ptr, lse_ptr, b + offs_h * 0,
                      kvh * G + offs_h, offs_h < G, HQ, n_slots, NSP + NSS,
                      stride_ob, stride_oh, D, BLOCK_S)


def launch_cascade_last(q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor,
                        prefix_pages: torch.Tensor, prefix_len: int,
                        suffix_block_tables: torch.Tensor, suffix_lens: torch.Tensor,
                        qk_scale2: float, out: torch.Tensor, lse: torch.Tensor,
                        tiles: tuple[int, int, int, int, int], suffix_splits: int,
                        suffix_block_n: int = 64, num_stages: int = 2,
                        fast_prefix: bool = False) -> None:
    """Launch the one-launch cascade: ``tiles`` = (BM, BN, warps, split_len, prefix splits) of
    :func:`~parrotsim.kernels.prefix_tile.prefix_tiles`, ``qk_scale2`` = softmax scale *
    log2(e); writes ``out`` [B, Hq, D] and the natural-log ``lse`` [B, Hq] (contiguous).
    ``fast_prefix``: prefix tiles of :mod:`parrotsim.kernels.prefix_tile_fast`."""
    B, HQ, D = q.shape
    _, page, HKV, _ = k_cache.shape
    G = HQ // HKV
    bm, bn, warps, split_len, nsp = tiles
    nss = suffix_splits
    n_slots = nsp + nss
    po = torch.empty(B, HQ, n_slots, D, dtype=torch.float32, device=q.device)
    plse = torch.empty(B, HQ, n_slots, dtype=torch.float32, device=q.device)
    rb = -(-(B * G) // bm)
    n_pre = rb * HKV * nsp
    _cascade_last_kernel[(n_pre + B * HKV * nss,)](
        q, k_cache, v_cache, prefix_pages, prefix_len, suffix_block_tables, suffix_lens,
        po, plse, counters(q.device, B * HQ), out, lse, split_len, qk_scale2, B * G, B, HQ, HKV,
        n_slots, rb, n_pre, q.stride(0), q.stride(1), *k_cache.stride()[:3],
        *v_cache.stride()[:3], suffix_block_tables.stride(0), out.stride(0), out.stride(1),
        nsp, nss, G=G, BM=bm, BN=bn, BLOCK_H=max(16, triton.next_power_of_2(G)),
        BN_S=suffix_block_n, D=D, PAGE=page, F32=INTERPRET,
        BLOCK_S=_block_s(n_slots), FAST=fast_prefix, num_warps=warps,
        num_stages=num_stages)


__all__ = ["launch_cascade_last"]
