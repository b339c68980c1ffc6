"""Single-token qkv GEMV with rotary embedding and the KV-cache write in its epilogue (Triton).

What is modelled: the batch-1 decode step's qkv projection ``qkv = RMSNorm(h) @ W_qkv^T``
followed by what :func:`parrotsim.kernels.llama_ops.rope_and_cache` does (rotate-half RoPE of q and k at
the token's position, k and v stored to the paged cache slot), in one kernel, so the chain of
dependent kernels per layer is one shorter (kernels/NOTES.md, session 4).

Row mapping: RoPE pairs dimension d with d + D/2 of the same head, which lie in different row
tiles of the plain GEMV. Here program p owns the ``BN`` rows ``head * D + j * BN/2 + i`` and
``... + D/2`` (i < BN/2), interleaved, so its accumulator reshapes to [BN/2, 2] = (x1, x2) pairs.
No weight permutation: rows are independent, only the program -> rows assignment changes.
Numerics match the two-kernel path: the GEMV result is rounded to the activation dtype first.
Needs ``D % BN == 0``. Units: positions and slots are token indices (slot = page * 16 + offset).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from parrotsim.kernels._common import INTERPRET
from parrotsim.kernels.gemv import gdc_launch_if, gemv_acc, gemv_tiles


@triton.jit
def _gemv_rope_kernel(x_ptr, w_ptr, out_ptr, nw_ptr, K, eps, stride_w, pos_ptr, cos_ptr,
                      sin_ptr, slot_ptr, kc_ptr, vc_ptr, stride_kp, stride_kt, stride_kh,
                      stride_vp, stride_vt, stride_vh,
                      HQ: tl.constexpr, HKV: tl.constexpr, HALF: tl.constexpr,
                      PAGE: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                      PRE: tl.constexpr, STAGES: tl.constexpr, PDL: tl.constexpr):
    gdc_launch_if(PDL)
    R: tl.constexpr = BN // 2
    PER_HEAD: tl.constexpr = HALF // R
    pid = tl.program_id(0)
    head = pid // PER_HEAD
    d0 = (pid % PER_HEAD) * R
    r = tl.arange(0, BN)
    offs_n = head * (2 * HALF) + d0 + r // 2 + (r % 2) * HALF
    nmask = offs_n >= 0
    acc = gemv_acc(x_ptr, w_ptr, nw_ptr, offs_n, nmask, K, eps, stride_w, 1, BN, BK, PRE,
                   STAGES, PDL)
    y = acc.to(out_ptr.dtype.element_ty).to(tl.float32)
    x1, x2 = tl.split(tl.reshape(y, [R, 2]))
    d1 = d0 + tl.arange(0, R)
    dst = out_ptr + head * (2 * HALF) + d1
    if head < HQ + HKV:  # q or k head: rotate
        pos = tl.load(pos_ptr).to(tl.int64)
        c = tl.load(cos_ptr + pos * HALF + d1)
        s = tl.load(sin_ptr + pos * HALF + d1)
        y1 = (x1 * c - x2 * s).to(out_ptr.dtype.element_ty)
        y2 = (x2 * c + x1 * s).to(out_ptr.dtype.element_ty)
    else:
        y1 = x1.to(out_ptr.dtype.element_ty)
        y2 = x2.to(out_ptr.dtype.element_ty)
    tl.store(dst, y1)
    tl.store(dst + HALF, y2)
    if head >= HQ:
        slot = tl.load(slot_ptr).to(tl.int64)
        if head < HQ + HKV:
            kv = kc_ptr + (slot // PAGE) * stride_kp + (slot % PAGE) * stride_kt
            kv = kv + (head - HQ) * stride_kh + d1
        else:
            kv = vc_ptr + (slot // PAGE) * stride_vp + (slot % PAGE) * stride_vt
            kv = kv + (head - HQ - HKV) * stride_vh + d1
        tl.store(kv, y1)
        tl.store(kv + HALF, y2)


def gemv_rope_cache(x: torch.Tensor, weight: torch.Tensor, norm_weight: torch.Tensor,
                    eps: float, position: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor,
                    slot: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor,
                    num_heads: int, num_kv_heads: int, pdl: bool = True,
                    tiles: tuple[int, int, int, int, int] | None = None) -> torch.Tensor:
    """``qkv = RMSNorm(x) @ weight^T`` for one token, q and k rotated, k and v stored to cache.

    Args:
        x: [1, K] bf16 residual stream; weight [(Hq + 2 Hkv) * D, K]; norm_weight [K].
        position, slot: int64 [1] token position and cache slot (page * 16 + offset).
        cos, sin: fp32 [max_pos, D/2]; k_cache, v_cache: [pages, 16, Hkv, D].
        pdl: programmatic dependent launch (CUDA only); tiles: as :func:`parrotsim.kernels.gemv.gemv`.
    Returns:
        qkv [1, (Hq + 2 Hkv) * D] (q and k rotated), same layout as the unfused path.
    """
    assert x.shape[0] == 1
    n, k = weight.shape
    half = cos.shape[1]
    assert n == (num_heads + 2 * num_kv_heads) * 2 * half
    bn, bk, pre, warps, stages = tiles or gemv_tiles(n, k)
    bn = min(bn, 2 * half)
    assert (2 * half) % bn == 0 and bn >= 2
    out = torch.empty(1, n, dtype=weight.dtype, device=x.device)
    _gemv_rope_kernel[(n // bn,)](
        x, weight, out, norm_weight, k, eps, weight.stride(0), position, cos, sin, slot,
        k_cache, v_cache, *k_cache.stride()[:3], *v_cache.stride()[:3], HQ=num_heads,
        HKV=num_kv_heads, HALF=half, PAGE=k_cache.shape[1], BN=bn, BK=bk, PRE=pre,
        STAGES=stages, PDL=pdl and not INTERPRET, num_warps=warps, num_stages=stages,
        **({"launch_pdl": True} if pdl and not INTERPRET else {}))
    return out


__all__ = ["gemv_rope_cache"]
