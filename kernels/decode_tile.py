"""The decode tile and the merge kernel shared by the paged and shared-prefix decode kernels.

``decode_tile``: attention of the G query heads of one (sequence, KV head) over one KV split of a
paged sequence (the G heads are the rows of a ``tl.dot``, padded to ``BLOCK_H``), written as a
partial state (fp32 o, log2 LSE) or, with one split, as the final output. ``merge_kernel``: the
log-sum-exp merge of the partial states of one (sequence, query head) per program. Moved here
verbatim from :mod:`parrotsim.kernels.paged_decode` so that kernels built on the tile (the
last-finisher merge, :mod:`parrotsim.kernels.last_merge`) need not import the paged front end.
"""

from __future__ import annotations

import triton
import triton.language as tl

from parrotsim.kernels._common import mma
from parrotsim.kernels.gemv import gdc_launch_if, gdc_wait_if


@triton.jit
def attend_pages(
    q, k_ptr, v_ptr, table_ptr, start, end, kvh, qk_scale,
    stride_kp, stride_kt, stride_kh, stride_vp, stride_vt, stride_vh, pre_ptr, pre_len,
    ROWS: tl.constexpr, BN: tl.constexpr, D: tl.constexpr, PAGE: tl.constexpr,
    F32: tl.constexpr, PREFIX: tl.constexpr = False,
):
    """Online-softmax attention of the query rows ``q`` [ROWS, D] (scores scaled by
    ``qk_scale``, log2 domain) over tokens ``[start, end)`` of KV head ``kvh``, token ``t``
    being slot ``t % PAGE`` of page ``table_ptr[t // PAGE]``, BN tokens a tile. With PREFIX,
    the first ``pre_len`` tokens are a shared prefix in the pages ``pre_ptr[..]`` and token
    ``t >= pre_len`` is token ``t - pre_len`` of ``table_ptr`` (a prefix may end inside its
    last page). Returns the running max ``m_i`` and sum ``l_i`` [ROWS] and the unnormalised
    output ``acc`` [ROWS, D] (fp32): the loop every decode and prefix tile runs."""
    offs_d = tl.arange(0, D)
    offs_n = tl.arange(0, BN)
    m_i = tl.full([ROWS], float("-inf"), tl.float32)
    l_i = tl.zeros([ROWS], tl.float32)
    acc = tl.zeros([ROWS, D], tl.float32)
    for n0 in range(start, end, BN):
        tok = n0 + offs_n
        nmask = tok < end
        if PREFIX:  # the shared prefix's pages, then the sequence's own
            in_pre = tok < pre_len
            j = tl.where(in_pre, tok, tok - pre_len)
            page = tl.where(in_pre, tl.load(pre_ptr + j // PAGE, mask=nmask & in_pre, other=0),
                            tl.load(table_ptr + j // PAGE, mask=nmask & (tok >= pre_len),
                                    other=0)).to(tl.int64)
            in_page = j % PAGE
        else:
            page = tl.load(table_ptr + tok // PAGE, mask=nmask, other=0).to(tl.int64)
            in_page = tok % PAGE
        k_rows = page * stride_kp + in_page * stride_kt + kvh * stride_kh
        k = tl.load(k_ptr + k_rows[:, None] + offs_d[None, :], mask=nmask[:, None], other=0.0)
        s = mma(q, tl.trans(k), F32) * qk_scale
        s = tl.where(nmask[None, :], s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        alpha = tl.exp2(m_i - m_new)
        p = tl.exp2(s - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, 1)
        v_rows = page * stride_vp + in_page * stride_vt + kvh * stride_vh
        v = tl.load(v_ptr + v_rows[:, None] + offs_d[None, :], mask=nmask[:, None], other=0.0)
        acc = acc * alpha[:, None] + mma(p.to(v.dtype), v, F32)
        m_i = m_new
    return m_i, l_i, acc


@triton.jit
def decode_tile(
    q_ptr, k_ptr, v_ptr, bt_ptr, lens_ptr, po_ptr, plse_ptr, out_ptr, lse_ptr,
    b, kvh, split, slot, qk_scale, HQ, n_slots,
    stride_qb, stride_qh, stride_kp, stride_kt, stride_kh, stride_vp, stride_vt, stride_vh,
    stride_btb, stride_ob, stride_oh, NUM_SPLITS, pre_ptr, pre_len,
    G: tl.constexpr, BLOCK_H: tl.constexpr, BLOCK_N: tl.constexpr,
    D: tl.constexpr, PAGE: tl.constexpr, DIRECT: tl.constexpr, F32: tl.constexpr,
    MERGE: tl.constexpr = False, PREFIX: tl.constexpr = False,
):
    """Attention of the G query heads of (sequence b, kv head kvh) over one KV split.

    Writes the normalised partial output and lse2 to partial slot ``slot`` or, with DIRECT
    (one split), the final output (KV dtype) and natural-log LSE. With MERGE (and DIRECT) the
    partial states already in slots ``0..slot-1`` are merged in first (chained cascade). With
    PREFIX every sequence starts with the ``pre_len`` tokens of the shared pages ``pre_ptr``
    and its table row holds the rest (:func:`attend_pages`); ``lens`` counts the rest alone.
    """
    seq_len = tl.load(lens_ptr + b)
    if PREFIX:
        seq_len += pre_len
    split_len = tl.cdiv(tl.cdiv(seq_len, NUM_SPLITS), BLOCK_N) * BLOCK_N
    start = split * split_len
    end = tl.minimum(start + split_len, seq_len)
    offs_h = tl.arange(0, BLOCK_H)
    offs_d = tl.arange(0, D)
    hmask = offs_h < G
    heads = kvh * G + offs_h
    q = tl.load(q_ptr + b * stride_qb + heads[:, None] * stride_qh + offs_d[None, :],
                mask=hmask[:, None], other=0.0)
    m_i, l_i, acc = attend_pages(
        q, k_ptr, v_ptr, bt_ptr + b.to(tl.int64) * stride_btb, start, end, kvh, qk_scale,
        stride_kp, stride_kt, stride_kh, stride_vp, stride_vt, stride_vh, pre_ptr, pre_len,
        BLOCK_H, BLOCK_N, D, PAGE, F32, PREFIX)
    l_safe = tl.where(l_i > 0, l_i, 1.0)
    o = acc / l_safe[:, None]
    lse2 = tl.where(l_i > 0, m_i + tl.log2(l_safe), float("-inf"))
    if MERGE:  # fold in the states of partial slots 0..slot-1 (e.g. the shared prefix's)
        base = (b * HQ + heads).to(tl.int64) * n_slots
        mx = lse2
        wsum = tl.where(lse2 == float("-inf"), 0.0, 1.0)
        o = o * wsum[:, None]
        for s in range(0, slot):
            ls = tl.load(plse_ptr + base + s, mask=hmask, other=float("-inf"))
            os = tl.load(po_ptr + (base + s)[:, None] * D + offs_d[None, :], mask=hmask[:, None],
                         other=0.0)
            mn = tl.maximum(mx, ls)
            mn = tl.where(mn == float("-inf"), 0.0, mn)
            a = tl.exp2(mx - mn)
            c = tl.exp2(ls - mn)
            o = o * a[:, None] + os * c[:, None]
            wsum = wsum * a + c
            mx = mn
        o = o / tl.where(wsum > 0, wsum, 1.0)[:, None]
        lse2 = tl.where(wsum > 0, mx + tl.log2(tl.where(wsum > 0, wsum, 1.0)), float("-inf"))
    if DIRECT:
        tl.store(out_ptr + b * stride_ob + heads[:, None] * stride_oh + offs_d[None, :],
                 o.to(out_ptr.dtype.element_ty), mask=hmask[:, None])
        tl.store(lse_ptr + b * HQ + heads, lse2 * 0.6931471805599453, mask=hmask)
    else:
        base = (b * HQ + heads).to(tl.int64) * n_slots + slot
        tl.store(po_ptr + base[:, None] * D + offs_d[None, :], o, mask=hmask[:, None])
        tl.store(plse_ptr + base, lse2, mask=hmask)


@triton.jit
def merge_kernel(po_ptr, plse_ptr, out_ptr, lse_ptr, HQ, n_slots, stride_ob, stride_oh,
                 D: tl.constexpr, BLOCK_S: tl.constexpr, PDL: tl.constexpr = False,
                 LSE2: tl.constexpr = False):
    """Merge the ``n_slots`` partial states of (sequence, head) = program (0, 1) by LSE.
    With LSE2 the merged LSE is stored in the log2 domain (a partial state for a later merge)."""
    gdc_launch_if(PDL)
    gdc_wait_if(PDL)
    b = tl.program_id(0)
    h = tl.program_id(1)
    offs_s = tl.arange(0, BLOCK_S)
    offs_d = tl.arange(0, D)
    smask = offs_s < n_slots
    base = (b * HQ + h).to(tl.int64) * n_slots
    lse = tl.load(plse_ptr + base + offs_s, mask=smask, other=float("-inf"))
    m = tl.max(lse, 0)
    m = tl.where(m == float("-inf"), 0.0, m)
    w = tl.exp2(lse - m)
    wsum = tl.sum(w, 0)
    o = tl.load(po_ptr + (base + offs_s)[:, None] * D + offs_d[None, :],
                mask=smask[:, None], other=0.0)
    # a slot of weight 0 (lse -inf: a split past its sequence, or a slot no launch wrote, whose
    # memory is uninitialised) adds nothing, whatever its partial output holds (0 x NaN is NaN)
    out = tl.sum(tl.where(w[:, None] > 0, o * w[:, None], 0.0), 0) / tl.where(wsum > 0, wsum,
                                                                               1.0)
    tl.store(out_ptr + b * stride_ob + h * stride_oh + offs_d, out.to(out_ptr.dtype.element_ty))
    lse_out = tl.where(wsum > 0, m + tl.log2(wsum), float("-inf"))
    if not LSE2:
        lse_out = lse_out * 0.6931471805599453
    tl.store(lse_ptr + b * HQ + h, lse_out)


__all__ = ["decode_tile", "merge_kernel"]
