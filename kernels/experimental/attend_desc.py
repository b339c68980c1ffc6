"""The online-softmax loop and partial-state store of the descriptor kernels.

``attend_desc``: query rows ``q`` [ROWS, D] against tokens ``[start, end)`` of one KV head whose
K and V rows are ``row0 + t`` of tensor descriptors over the cache viewed as [pages * 16,
Hkv * D] (columns ``col .. col+D-1``): the loop of :func:`parrotsim.kernels.decode_tile.attend_pages`
with each tile one bulk copy instead of a page-table gather. ``store_partial``: the normalised
fp32 output and log2 LSE of those rows into partial slot ``base``. Used by
:mod:`.prefix_desc` and :mod:`.decode_desc`.
"""

from __future__ import annotations

import triton
import triton.language as tl

from parrotsim.kernels._common import mma


@triton.jit
def attend_desc(q, k_desc, v_desc, row0, start, end, col, qk_scale,
                ROWS: tl.constexpr, BN: tl.constexpr, D: tl.constexpr, F32: tl.constexpr):
    """Running max ``m_i``, sum ``l_i`` [ROWS] and unnormalised output ``acc`` [ROWS, D] (fp32,
    scores in the log2 domain) over tokens ``[start, end)``; rows past ``end`` are masked."""
    offs_n = tl.arange(0, BN)
    m_i = tl.full([ROWS], float("-inf"), tl.float32)
    l_i = tl.zeros([ROWS], tl.float32)
    acc = tl.zeros([ROWS, D], tl.float32)
    for n0 in range(start, end, BN):
        k = k_desc.load([row0 + n0, col])
        s = mma(q, tl.trans(k), F32) * qk_scale
        s = tl.where((n0 + offs_n)[None, :] < end, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        alpha = tl.exp2(m_i - m_new)
        p = tl.exp2(s - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, 1)
        v = v_desc.load([row0 + n0, col])
        acc = acc * alpha[:, None] + mma(p.to(v.dtype), v, F32)
        m_i = m_new
    return m_i, l_i, acc


@triton.jit
def store_partial(po_ptr, plse_ptr, base, m_i, l_i, acc, mask, D: tl.constexpr):
    """Rows' partial state (``acc / l_i`` and ``m_i + log2 l_i``; -inf without tokens) into
    slot offsets ``base`` [ROWS] of ``po`` [.., D] / ``plse``."""
    offs_d = tl.arange(0, D)
    l_safe = tl.where(l_i > 0, l_i, 1.0)
    lse2 = tl.where(l_i > 0, m_i + tl.log2(l_safe), float("-inf"))
    tl.store(po_ptr + base[:, None] * D + offs_d[None, :], acc / l_safe[:, None],
             mask=mask[:, None])
    tl.store(plse_ptr + base, lse2, mask=mask)


__all__ = ["attend_desc", "store_partial"]
