"""Fused elementwise ops for the LLaMA forward pass (Triton).

* :func:`rms_norm` - one pass RMSNorm (HF rounding: normalise in fp32, round, times weight).
* :func:`silu_mul` - ``silu(gate) * up`` for a [T, 2I] gate_up activation.
* :func:`rope_and_cache` - rotary embedding applied in place to q and k inside the fused qkv
  activation, plus the write of k and v into the paged KV cache at ``slot_mapping``.

The skinny decode GEMM that used to live here (slower than cuBLAS) is
:func:`parrotsim.kernels.experimental.skinny.skinny_linear`.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from parrotsim.kernels._common import INTERPRET
from parrotsim.kernels.gemv import gdc_launch_if, gdc_wait_if


@triton.jit
def _rms_norm_kernel(x_ptr, w_ptr, out_ptr, H, eps, stride_x, stride_o, BLOCK: tl.constexpr):
    t = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    mask = offs < H
    x = tl.load(x_ptr + t * stride_x + offs, mask=mask, other=0.0).to(tl.float32)
    inv = tl.rsqrt(tl.sum(x * x, 0) / H + eps)
    xn = (x * inv).to(out_ptr.dtype.element_ty).to(tl.float32)
    w = tl.load(w_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + t * stride_o + offs, (xn * w).to(out_ptr.dtype.element_ty), mask=mask)


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    """RMSNorm over the last dim: x [T, H] (bf16), weight [H] -> [T, H] in x.dtype."""
    out = torch.empty_like(x)
    if x.shape[0]:
        _rms_norm_kernel[(x.shape[0],)](x, weight, out, x.shape[1], eps, x.stride(0),
                                        out.stride(0), BLOCK=triton.next_power_of_2(x.shape[1]),
                                        num_warps=8 if x.shape[1] >= 4096 else 4)
    return out


@triton.jit
def _silu_mul_kernel(x_ptr, out_ptr, inter, stride_x, stride_o, BLOCK: tl.constexpr):
    t = tl.program_id(0).to(tl.int64)
    offs = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < inter
    g = tl.load(x_ptr + t * stride_x + offs, mask=mask, other=0.0).to(tl.float32)
    u = tl.load(x_ptr + t * stride_x + inter + offs, mask=mask, other=0.0).to(tl.float32)
    a = (g / (1.0 + tl.exp(-g))).to(out_ptr.dtype.element_ty).to(tl.float32)
    tl.store(out_ptr + t * stride_o + offs, (a * u).to(out_ptr.dtype.element_ty), mask=mask)


def silu_mul(gate_up: torch.Tensor) -> torch.Tensor:
    """``silu(g) * u`` for gate_up [T, 2I] = [g | u] -> [T, I] (bf16 rounding like torch)."""
    t, two_i = gate_up.shape
    out = torch.empty(t, two_i // 2, dtype=gate_up.dtype, device=gate_up.device)
    if t:
        _silu_mul_kernel[(t, triton.cdiv(two_i // 2, 1024))](
            gate_up, out, two_i // 2, gate_up.stride(0), out.stride(0), BLOCK=1024, num_warps=4)
    return out


@triton.jit
def _rope_cache_kernel(qkv_ptr, pos_ptr, cos_ptr, sin_ptr, slot_ptr, kc_ptr, vc_ptr, stride_t,
                       stride_kp, stride_kt, stride_kh, stride_vp, stride_vt, stride_vh,
                       HQ: tl.constexpr, HKV: tl.constexpr, HALF: tl.constexpr,
                       BH: tl.constexpr, PAGE: tl.constexpr, PDL: tl.constexpr = False):
    gdc_launch_if(PDL)
    gdc_wait_if(PDL)
    t = tl.program_id(0).to(tl.int64)
    kind = tl.program_id(1)  # 0: q heads, 1: k heads, 2: v heads
    D: tl.constexpr = 2 * HALF
    offs_h = tl.arange(0, BH)
    offs_d = tl.arange(0, HALF)
    n_heads = tl.where(kind == 0, HQ, HKV)
    hmask = (offs_h < n_heads)[:, None]
    col0 = tl.where(kind == 0, 0, tl.where(kind == 1, HQ * D, (HQ + HKV) * D))
    src = qkv_ptr + t * stride_t + col0 + offs_h[:, None] * D + offs_d[None, :]
    x1 = tl.load(src, mask=hmask, other=0.0)
    x2 = tl.load(src + HALF, mask=hmask, other=0.0)
    slot = tl.load(slot_ptr + t).to(tl.int64)
    if kind == 2:
        dst = vc_ptr + (slot // PAGE) * stride_vp + (slot % PAGE) * stride_vt
        dst = dst + offs_h[:, None] * stride_vh + offs_d[None, :]
        tl.store(dst, x1, mask=hmask)
        tl.store(dst + HALF, x2, mask=hmask)
    else:
        pos = tl.load(pos_ptr + t).to(tl.int64)
        c = tl.load(cos_ptr + pos * HALF + offs_d)[None, :]
        s = tl.load(sin_ptr + pos * HALF + offs_d)[None, :]
        a = x1.to(tl.float32)
        b = x2.to(tl.float32)
        y1 = (a * c - b * s).to(x1.dtype)
        y2 = (b * c + a * s).to(x1.dtype)
        tl.store(src, y1, mask=hmask)
        tl.store(src + HALF, y2, mask=hmask)
        if kind == 1:
            dst = kc_ptr + (slot // PAGE) * stride_kp + (slot % PAGE) * stride_kt
            dst = dst + offs_h[:, None] * stride_kh + offs_d[None, :]
            tl.store(dst, y1, mask=hmask)
            tl.store(dst + HALF, y2, mask=hmask)


def rope_and_cache(qkv: torch.Tensor, positions: torch.Tensor, cos: torch.Tensor,
                   sin: torch.Tensor, slot_mapping: torch.Tensor, k_cache: torch.Tensor,
                   v_cache: torch.Tensor, num_heads: int, num_kv_heads: int,
                   pdl: bool = False) -> None:
    """Rotate q and k of qkv [T, (Hq+2Hkv)*D] in place (rotate-half / HF LLaMA convention,
    cos/sin fp32 [max_pos, D/2]) and write k, v of token t to cache slot ``slot_mapping[t]``
    (= page * 16 + offset) of k_cache / v_cache [pages, 16, Hkv, D]. ``pdl``: launch with
    programmatic dependent launch (see :mod:`parrotsim.kernels.gemv`)."""
    t = qkv.shape[0]
    if t == 0:
        return
    half = cos.shape[1]
    _rope_cache_kernel[(t, 3)](
        qkv, positions, cos, sin, slot_mapping, k_cache, v_cache, qkv.stride(0),
        *k_cache.stride()[:3], *v_cache.stride()[:3], HQ=num_heads, HKV=num_kv_heads,
        HALF=half, BH=triton.next_power_of_2(max(num_heads, num_kv_heads)),
        PAGE=k_cache.shape[1], PDL=pdl and not INTERPRET, num_warps=4,
        **({"launch_pdl": True} if pdl and not INTERPRET else {}))
