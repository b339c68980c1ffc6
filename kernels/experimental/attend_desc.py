"""The online-softmax loop and partial-state store of the descriptor kernels.

``attend_desc``: query rows ``q`` [ROWS, D] against tokens ``[start, end)`` of one KV head whose
K and V rows are ``row0 + t`` of tensor descriptors over the cache viewed as [pages * 16,
Hkv * D] (columns ``col .. col+D-1``): the loop of :func:`parrotsim.kernels.decode_tile.attend_pages`
with each tile one bulk copy instead of a page-table gather; with ``PAGES`` > 0, token ``t``'s
row is instead on page ``table[t // 16]`` and a tile is ``PAGES`` copies of one page each
(:func:`page_rows`). ``store_partial``: the normalised
fp32 output and log2 LSE of those rows into partial slot ``base``. Used by
:mod:`.prefix_desc`, :mod:`.decode_desc` and :mod:`.paged_desc`.
"""

from __future__ import annotations

import triton
import triton.language as tl

from parrotsim.kernels._common import mma


@triton.jit
def page_rows(desc, table, p0, n_pages, col, PAGE: tl.constexpr, D: tl.constexpr,
              PAGES: tl.constexpr):
    """The [PAGES * PAGE, D] rows of table entries ``p0 .. p0 + PAGES - 1``, one copy a page
    joined in table order (entries past ``n_pages`` read page 0; the caller masks them)."""
    a = desc.load([tl.load(table + p0, mask=p0 < n_pages, other=0) * PAGE, col])
    if PAGES == 1:  # one return at the end: Triton 3.6 rejects an early return in a branch
        rows = a
    else:
        b = desc.load([tl.load(table + p0 + 1, mask=p0 + 1 < n_pages, other=0) * PAGE, col])
        ab = tl.join(a, b)  # [PAGE, D, 2]
        if PAGES == 2:
            rows = tl.reshape(tl.permute(ab, (2, 0, 1)), (2 * PAGE, D))
        else:
            c = desc.load([tl.load(table + p0 + 2, mask=p0 + 2 < n_pages, other=0) * PAGE,
                           col])
            d = desc.load([tl.load(table + p0 + 3, mask=p0 + 3 < n_pages, other=0) * PAGE,
                           col])
            abcd = tl.join(ab, tl.join(c, d))  # [PAGE, D, 2 (in a pair), 2 (which pair)]
            rows = tl.reshape(tl.permute(abcd, (3, 2, 0, 1)), (4 * PAGE, D))
    return rows


@triton.jit
def attend_desc(q, k_desc, v_desc, row0, start, end, col, qk_scale,
                ROWS: tl.constexpr, BN: tl.constexpr, D: tl.constexpr, F32: tl.constexpr,
                table=None, n_pages=0, PAGES: tl.constexpr = 0, PAGE: tl.constexpr = 16):
    """Running max ``m_i``, sum ``l_i`` [ROWS] and unnormalised output ``acc`` [ROWS, D] (fp32,
    scores in the log2 domain) over tokens ``[start, end)``; rows past ``end`` are masked.
    ``PAGES`` > 0: rows through the page ``table`` (``n_pages`` entries), BN = PAGES * PAGE."""
    offs_n = tl.arange(0, BN)
    m_i = tl.full([ROWS], float("-inf"), tl.float32)
    l_i = tl.zeros([ROWS], tl.float32)
    acc = tl.zeros([ROWS, D], tl.float32)
    for n0 in range(start, end, BN):
        if PAGES == 0:
            k = k_desc.load([row0 + n0, col])
        else:
            k = page_rows(k_desc, table, n0 // PAGE, n_pages, col, PAGE, D, PAGES)
        s = mma(q, tl.trans(k), F32) * qk_scale
        s = tl.where((n0 + offs_n)[None, :] < end, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        alpha = tl.exp2(m_i - m_new)
        p = tl.exp2(s - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, 1)
        if PAGES == 0:
            v = v_desc.load([row0 + n0, col])
        else:
            v = page_rows(v_desc, table, n0 // PAGE, n_pages, col, PAGE, D, PAGES)
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


__all__ = ["attend_desc", "page_rows", "store_partial"]
