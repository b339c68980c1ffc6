"""Prefix tiles of the shared-prefix ("cascade") decode kernel.

``prefix_tile``: one [BM, D] block of the (sequence, query head of KV head ``kvh``) rows against
one split of the shared prefix, read once for all those rows; partial state (fp32 o, log2 LSE)
to slot ``split``. ``_prefix_kernel`` launches the tiles alone; :func:`prefix_tiles` picks the
tile and the split by batch. Moved here verbatim from
:mod:`parrotsim.kernels.shared_prefix_decode`.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from parrotsim.kernels._common import num_sms
from parrotsim.kernels.decode_tile import attend_pages


@triton.jit
def prefix_tile(
    q_ptr, k_ptr, v_ptr, pages_ptr, prefix_len, po_ptr, plse_ptr,
    rb, kvh, split, split_len, qk_scale, n_rows, HQ, n_slots,
    stride_qb, stride_qh, stride_kp, stride_kt, stride_kh, stride_vp, stride_vt, stride_vh,
    G: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, D: tl.constexpr, PAGE: tl.constexpr,
    F32: tl.constexpr,
):
    """Rows ``rb*BM ..`` of the (sequence, head-in-group) matrix of KV head ``kvh`` against
    prefix tokens ``[split*split_len, (split+1)*split_len)``; partial state to slot ``split``."""
    rows = rb * BM + tl.arange(0, BM)
    rmask = rows < n_rows
    seq = rows // G
    heads = kvh * G + rows % G
    offs_d = tl.arange(0, D)
    q = tl.load(q_ptr + seq[:, None] * stride_qb + heads[:, None] * stride_qh + offs_d[None, :],
                mask=rmask[:, None], other=0.0)
    start = split * split_len
    end = tl.minimum(start + split_len, prefix_len)
    m_i, l_i, acc = attend_pages(q, k_ptr, v_ptr, pages_ptr, start, end, kvh, qk_scale,
                                 stride_kp, stride_kt, stride_kh, stride_vp, stride_vt,
                                 stride_vh, 0, 0, BM, BN, D, PAGE, F32)
    l_safe = tl.where(l_i > 0, l_i, 1.0)
    lse2 = tl.where(l_i > 0, m_i + tl.log2(l_safe), float("-inf"))
    base = (seq * HQ + heads).to(tl.int64) * n_slots + split
    tl.store(po_ptr + base[:, None] * D + offs_d[None, :], acc / l_safe[:, None],
             mask=rmask[:, None])
    tl.store(plse_ptr + base, lse2, mask=rmask)


@triton.jit
def _prefix_kernel(
    q_ptr, k_ptr, v_ptr, pages_ptr, prefix_len, po_ptr, plse_ptr,
    split_len, qk_scale, n_rows, HQ, n_slots,
    stride_qb, stride_qh, stride_kp, stride_kt, stride_kh, stride_vp, stride_vt, stride_vh,
    G: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, D: tl.constexpr, PAGE: tl.constexpr,
    F32: tl.constexpr,
):
    prefix_tile(q_ptr, k_ptr, v_ptr, pages_ptr, prefix_len, po_ptr, plse_ptr,
                tl.program_id(0), tl.program_id(1), tl.program_id(2), split_len, qk_scale,
                n_rows, HQ, n_slots, stride_qb, stride_qh, stride_kp, stride_kt, stride_kh,
                stride_vp, stride_vt, stride_vh, G, BM, BN, D, PAGE, F32)


def prefix_tiles(batch: int, group: int, prefix_len: int, num_kv_heads: int,
                 device: torch.device, split_tokens: int | None = None,
                 waves: float = 2.0, block_n: int = 64,
                 block_m: int | None = None,
                 at_most_one_wave: bool = False) -> tuple[int, int, int, int, int]:
    """Tile choice by batch size: returns ``(BM, BN, num_warps, split_len, num_splits)``.

    BM = rows (sequences x query heads of one KV head) per tile: 16/32/64/128 for up to 16/32/64/
    more rows. The prefix is cut into splits of ``split_len`` tokens (a multiple of BN) so that
    row-blocks x KV heads x splits fills ``waves`` waves of SMs, unless ``split_tokens`` is given;
    with ``at_most_one_wave`` (mode "concurrent") into as many splits as keep the programs at
    most one per SM (the suffix programs share the SMs; best at B=64/256, G=1/4, NOTES.md).
    """
    rows = batch * group
    bm = block_m or (16 if rows <= 16 else 32 if rows <= 32 else 64 if rows <= 64 else 128)
    bn = block_n
    warps = 8 if bm == 128 else 4
    if split_tokens is None:
        progs = -(-rows // bm) * num_kv_heads
        want = max(1, -(-int(waves * num_sms(device)) // progs))
        if at_most_one_wave:
            want = max(1, num_sms(device) // progs)
        split_tokens = -(-max(prefix_len, 1) // want)
        split_tokens = max(split_tokens, 256)
    split_len = -(-split_tokens // bn) * bn
    return bm, bn, warps, split_len, max(1, -(-prefix_len // split_len))


__all__ = ["_prefix_kernel", "prefix_tile", "prefix_tiles"]
