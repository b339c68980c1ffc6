"""A prefix tile with less work per score, for the cascade's FLOP-bound prefix phase at G >= 4.

At G >= 4 the shared-prefix kernel's time is a fixed cost plus the prefix tiles' FLOPs at
~200 TFLOP/s (kernels/NOTES.md, session 7), and in an online-softmax tile the per-score
element-wise work (scale, mask, max, exp2, sum) competes with the tensor cores. Against
:func:`parrotsim.kernels.prefix_tile.prefix_tile` (same arguments, same partial state) this
tile

* runs the whole BN-token tiles of its split without masks (no ``tok < end`` per load, no
  ``-inf`` select per score); only a last partial tile, which only the last split of a prefix
  that is not a multiple of BN has, is masked;
* folds the softmax scale into the exponent: the row max is taken on the raw products and
  scaled once per row, and ``exp2(raw * scale - max)`` is one fused multiply-add a score.

Opt-in through ``shared_prefix_decode_attention(mode="fused_last", fast_prefix=True)``.
"""

from __future__ import annotations

import triton
import triton.language as tl

from parrotsim.kernels._common import mma


@triton.jit
def _step(q, acc, m_i, l_i, k_ptr, v_ptr, pages_ptr, tok, nmask, kvh, qk_scale,
          stride_kp, stride_kt, stride_kh, stride_vp, stride_vt, stride_vh,
          D: tl.constexpr, PAGE: tl.constexpr, F32: tl.constexpr, MASKED: tl.constexpr):
    """One BN-token tile of the online softmax; ``nmask`` is used only if MASKED."""
    offs_d = tl.arange(0, D)
    if MASKED:
        page = tl.load(pages_ptr + tok // PAGE, mask=nmask, other=0).to(tl.int64)
    else:
        page = tl.load(pages_ptr + tok // PAGE).to(tl.int64)
    in_page = tok % PAGE
    k_rows = page * stride_kp + in_page * stride_kt + kvh * stride_kh
    v_rows = page * stride_vp + in_page * stride_vt + kvh * stride_vh
    if MASKED:
        k = tl.load(k_ptr + k_rows[:, None] + offs_d[None, :], mask=nmask[:, None], other=0.0)
    else:
        k = tl.load(k_ptr + k_rows[:, None] + offs_d[None, :])
    raw = mma(q, tl.trans(k), F32)
    if MASKED:
        raw = tl.where(nmask[None, :], raw, float("-inf"))
    m_new = tl.maximum(m_i, tl.max(raw, 1) * qk_scale)
    alpha = tl.exp2(m_i - m_new)
    p = tl.exp2(raw * qk_scale - m_new[:, None])
    l_i = l_i * alpha + tl.sum(p, 1)
    if MASKED:
        v = tl.load(v_ptr + v_rows[:, None] + offs_d[None, :], mask=nmask[:, None], other=0.0)
    else:
        v = tl.load(v_ptr + v_rows[:, None] + offs_d[None, :])
    acc = acc * alpha[:, None] + mma(p.to(v.dtype), v, F32)
    return acc, m_new, l_i


@triton.jit
def prefix_tile_fast(
    q_ptr, k_ptr, v_ptr, pages_ptr, prefix_len, po_ptr, plse_ptr,
    rb, kvh, split, split_len, qk_scale, n_rows, HQ, n_slots,
    stride_qb, stride_qh, stride_kp, stride_kt, stride_kh, stride_vp, stride_vt, stride_vh,
    G: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, D: tl.constexpr, PAGE: tl.constexpr,
    F32: tl.constexpr,
):
    """As :func:`~parrotsim.kernels.prefix_tile.prefix_tile`: rows ``rb*BM ..`` of KV head
    ``kvh`` against prefix tokens ``[split*split_len, (split+1)*split_len)`` (``split_len`` a
    multiple of BN); partial state (fp32 o, log2 LSE) to slot ``split``."""
    rows = rb * BM + tl.arange(0, BM)
    rmask = rows < n_rows
    seq = rows // G
    heads = kvh * G + rows % G
    offs_d = tl.arange(0, D)
    offs_n = tl.arange(0, BN)
    q = tl.load(q_ptr + seq[:, None] * stride_qb + heads[:, None] * stride_qh + offs_d[None, :],
                mask=rmask[:, None], other=0.0)
    start = split * split_len
    end = tl.minimum(start + split_len, prefix_len)
    whole = start + tl.maximum(end - start, 0) // BN * BN
    m_i = tl.full([BM], float("-inf"), tl.float32)
    l_i = tl.zeros([BM], tl.float32)
    acc = tl.zeros([BM, D], tl.float32)
    for n0 in range(start, whole, BN):
        acc, m_i, l_i = _step(q, acc, m_i, l_i, k_ptr, v_ptr, pages_ptr, n0 + offs_n,
                              offs_n < BN, kvh, qk_scale, stride_kp, stride_kt, stride_kh, stride_vp,
                              stride_vt, stride_vh, D, PAGE, F32, False)
    if whole < end:
        tok = whole + offs_n
        acc, m_i, l_i = _step(q, acc, m_i, l_i, k_ptr, v_ptr, pages_ptr, tok, tok < end, kvh,
                              qk_scale, stride_kp, stride_kt, stride_kh, stride_vp, stride_vt,
                              stride_vh, D, PAGE, F32, True)
    l_safe = tl.where(l_i > 0, l_i, 1.0)
    lse2 = tl.where(l_i > 0, m_i + tl.log2(l_safe), float("-inf"))
    base = (seq * HQ + heads).to(tl.int64) * n_slots + split
    tl.store(po_ptr + base[:, None] * D + offs_d[None, :], acc / l_safe[:, None],
             mask=rmask[:, None])
    tl.store(plse_ptr + base, lse2, mask=rmask)


__all__ = ["prefix_tile_fast"]
