"""Causal prefill attention for new tokens over a paged KV context (Triton).

The new tokens' K/V must already be written into the paged cache. New token i of sequence s has
position ``ctx_lens[s] + i`` and attends to cached tokens ``0 .. ctx_lens[s] + i``. Program =
(block of BM new tokens, sequence, query head); heavy (late, diagonal) blocks are scheduled first.
Key tiles strictly below the block's first position run without a mask.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from parrotsim.kernels._common import INTERPRET, LOG2E, default_scale, mma


@triton.jit
def _attend_tiles(acc, m_i, l_i, q, k_ptr, v_ptr, bt_row, lo, hi, pos_m, kv_len, kvh, qk_scale,
                  stride_kp, stride_kt, stride_kh, stride_vp, stride_vt, stride_vh,
                  BN: tl.constexpr, D: tl.constexpr, PAGE: tl.constexpr, CAUSAL: tl.constexpr,
                  F32: tl.constexpr):
    offs_n = tl.arange(0, BN)
    offs_d = tl.arange(0, D)
    for n0 in range(lo, hi, BN):
        tok = n0 + offs_n
        nmask = tok < kv_len
        page = tl.load(bt_row + tok // PAGE, mask=nmask, other=0).to(tl.int64)
        in_page = tok % PAGE
        k_rows = page * stride_kp + in_page * stride_kt + kvh * stride_kh
        k = tl.load(k_ptr + k_rows[:, None] + offs_d[None, :], mask=nmask[:, None], other=0.0)
        s = mma(q, tl.trans(k), F32) * qk_scale
        if CAUSAL:
            s = tl.where((tok[None, :] <= pos_m[:, None]) & nmask[None, :], s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        alpha = tl.exp2(m_i - m_new)
        p = tl.exp2(s - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, 1)
        v_rows = page * stride_vp + in_page * stride_vt + kvh * stride_vh
        v = tl.load(v_ptr + v_rows[:, None] + offs_d[None, :], mask=nmask[:, None], other=0.0)
        acc = acc * alpha[:, None] + mma(p.to(v.dtype), v, F32)
        m_i = m_new
    return acc, m_i, l_i


@triton.jit
def _prefill_kernel(
    q_ptr, k_ptr, v_ptr, o_ptr, bt_ptr, cu_q_ptr, ctx_ptr, qk_scale,
    stride_qt, stride_qh, stride_kp, stride_kt, stride_kh, stride_vp, stride_vt, stride_vh,
    stride_ot, stride_oh, stride_btb,
    G: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, D: tl.constexpr, PAGE: tl.constexpr,
    F32: tl.constexpr,
):
    mblk = tl.num_programs(0) - 1 - tl.program_id(0)
    s_idx = tl.program_id(1)
    head = tl.program_id(2)
    q0 = tl.load(cu_q_ptr + s_idx)
    q_len = tl.load(cu_q_ptr + s_idx + 1) - q0
    if mblk * BM < q_len:
        ctx = tl.load(ctx_ptr + s_idx)
        kvh = head // G
        offs_m = mblk * BM + tl.arange(0, BM)
        offs_d = tl.arange(0, D)
        mmask = offs_m < q_len
        q_off = (q0 + offs_m).to(tl.int64)
        q = tl.load(q_ptr + q_off[:, None] * stride_qt + head * stride_qh + offs_d[None, :],
                    mask=mmask[:, None], other=0.0)
        pos_m = ctx + offs_m
        kv_len = ctx + q_len
        hi = tl.minimum(ctx + (mblk + 1) * BM, kv_len)
        mid = (ctx + mblk * BM) // BN * BN
        bt_row = bt_ptr + s_idx.to(tl.int64) * stride_btb
        m_i = tl.full([BM], float("-inf"), tl.float32)
        l_i = tl.zeros([BM], tl.float32)
        acc = tl.zeros([BM, D], tl.float32)
        acc, m_i, l_i = _attend_tiles(acc, m_i, l_i, q, k_ptr, v_ptr, bt_row, 0, mid, pos_m,
                                      kv_len, kvh, qk_scale, stride_kp, stride_kt, stride_kh,
                                      stride_vp, stride_vt, stride_vh, BN, D, PAGE, False, F32)
        acc, m_i, l_i = _attend_tiles(acc, m_i, l_i, q, k_ptr, v_ptr, bt_row, mid, hi, pos_m,
                                      kv_len, kvh, qk_scale, stride_kp, stride_kt, stride_kh,
                                      stride_vp, stride_vt, stride_vh, BN, D, PAGE, True, F32)
        o = acc / tl.where(l_i > 0, l_i, 1.0)[:, None]
        tl.store(o_ptr + q_off[:, None] * stride_ot + head * stride_oh + offs_d[None, :],
                 o.to(o_ptr.dtype.element_ty), mask=mmask[:, None])


def prefill_attention(
    q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor,
    block_tables: torch.Tensor, cu_q: torch.Tensor, ctx_lens: torch.Tensor, max_q_len: int,
    sm_scale: float | None = None, out: torch.Tensor | None = None,
    block_m: int = 128, block_n: int = 64, num_warps: int = 8, num_stages: int = 3,
) -> torch.Tensor:
    """Causal attention of new (prefill-chunk) tokens over a paged KV cache.

    Args:
        q: [T, Hq, D] queries of all new tokens, sequences concatenated.
        k_cache, v_cache: [num_pages, 16, Hkv, D]; must already hold the new tokens' K/V.
        block_tables: int32 [N, max_pages], one row per sequence.
        cu_q: int32 [N+1] offsets of each sequence's new tokens in ``q``.
        ctx_lens: int32 [N] tokens cached before this chunk (new token i is at ctx + i).
        max_q_len: max new tokens of one sequence (Python int, sizes the grid).
        out: optional [T, Hq, D] output buffer (a view is fine).
    Returns:
        ``out`` [T, Hq, D] in q.dtype.
    """
    T, HQ, D = q.shape
    HKV = k_cache.shape[2]
    if out is None:
        out = torch.empty_like(q)
    n_seq = cu_q.numel() - 1
    if T == 0 or n_seq == 0:
        return out
    scale = default_scale(D, sm_scale) * LOG2E
    grid = (triton.cdiv(max_q_len, block_m), n_seq, HQ)
    _prefill_kernel[grid](
        q, k_cache, v_cache, out, block_tables, cu_q, ctx_lens, scale,
        q.stride(0), q.stride(1), *k_cache.stride()[:3], *v_cache.stride()[:3],
        out.stride(0), out.stride(1), block_tables.stride(0),
        G=HQ // HKV, BM=block_m, BN=block_n, D=D, PAGE=k_cache.shape[1], F32=INTERPRET,
        num_warps=num_warps, num_stages=num_stages)
    return out


__all__ = ["prefill_attention"]
