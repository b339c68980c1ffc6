"""Fused elementwise ops and a skinny decode GEMM for the LLaMA forward pass (Triton).

* :func:`rms_norm` - one pass RMSNorm (HF rounding: normalise in fp32, round, times weight).
* :func:`silu_mul` - ``silu(gate) * up`` for a [T, 2I] gate_up activation.
* :func:`rope_and_cache` - rotary embedding applied in place to q and k inside the fused qkv
  activation, plus the write of k and v into the paged KV cache at ``slot_mapping``.
* :func:`skinny_linear` - ``y = prologue(x) @ W^T (+ residual)`` for M <= 16 rows, streaming W
  once; prologue "rmsnorm" or "silu_mul" is recomputed per tile so a decode layer needs only
  four weight kernels and one rope/cache kernel besides attention.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from parrotsim.kernels._common import INTERPRET, num_sms
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


@triton.jit
def _skinny_kernel(x_ptr, w_ptr, out_ptr, res_ptr, nw_ptr, M, N, K, eps,
                   stride_x, stride_w, stride_o, stride_r,
                   PRO: tl.constexpr, RES: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr,
                   BK: tl.constexpr, F32: tl.constexpr):
    offs_m = tl.arange(0, BM)
    offs_n = tl.program_id(0) * BN + tl.arange(0, BN)
    offs_k = tl.arange(0, BK)
    mmask = offs_m < M
    nmask = offs_n < N
    x_rows = x_ptr + offs_m[:, None].to(tl.int64) * stride_x
    w_rows = w_ptr + offs_n[:, None].to(tl.int64) * stride_w
    ss = tl.zeros([BM], tl.float32)
    acc = tl.zeros([BM, BN], tl.float32)
    for k0 in range(0, K, BK):
        km = (k0 + offs_k) < K
        xm = mmask[:, None] & km[None, :]
        xv = tl.load(x_rows + k0 + offs_k[None, :], mask=xm, other=0.0)
        if PRO == 1:  # RMSNorm: sum of squares on the fly, 1/rms applied to acc at the end
            xf = xv.to(tl.float32)
            ss += tl.sum(xf * xf, 1)
            nw = tl.load(nw_ptr + k0 + offs_k, mask=km, other=0.0).to(tl.float32)
            xv = xf * nw[None, :]
            if BM > 1:
                xv = xv.to(w_ptr.dtype.element_ty)
        elif PRO == 2:
            g = xv.to(tl.float32)
            u = tl.load(x_rows + K + k0 + offs_k[None, :], mask=xm, other=0.0).to(tl.float32)
            a = (g / (1.0 + tl.exp(-g))).to(w_ptr.dtype.element_ty).to(tl.float32)
            xv = a * u
            if BM > 1:
                xv = xv.to(w_ptr.dtype.element_ty)
        wv = tl.load(w_rows + k0 + offs_k[None, :], mask=nmask[:, None] & km[None, :], other=0.0)
        if BM == 1:  # one row: multiply-reduce on CUDA cores, W goes straight to registers
            acc += tl.sum(xv.to(tl.float32) * wv.to(tl.float32), 1)[None, :]
        elif F32:
            acc += tl.dot(xv.to(tl.float32), tl.trans(wv.to(tl.float32)))
        else:
            acc += tl.dot(xv, tl.trans(wv))
    if PRO == 1:
        acc = acc * tl.rsqrt(ss / K + eps)[:, None]
    omask = mmask[:, None] & nmask[None, :]
    if RES:
        acc += tl.load(res_ptr + offs_m[:, None] * stride_r + offs_n[None, :], mask=omask,
                       other=0.0).to(tl.float32)
    tl.store(out_ptr + offs_m[:, None] * stride_o + offs_n[None, :],
             acc.to(out_ptr.dtype.element_ty), mask=omask)


def skinny_linear(x: torch.Tensor, weight: torch.Tensor, prologue: str = "none",
                  norm_weight: torch.Tensor | None = None, eps: float = 1e-5,
                  residual: torch.Tensor | None = None, out: torch.Tensor | None = None,
                  block_n: int | None = None, block_k: int | None = None,
                  num_warps: int | None = None, num_stages: int | None = None,
                  use_dot: bool | None = None) -> torch.Tensor:
    """``out = prologue(x) @ weight^T (+ residual)`` for few rows (M <= 16).

    x: [M, K] ([M, 2K] for prologue "silu_mul", whose input is [gate | up]); weight [N, K];
    prologue "rmsnorm" needs ``norm_weight`` [K]; residual [M, N] (may be ``out`` itself, which
    updates it in place). M == 1 uses CUDA-core multiply-reduce (``use_dot=False``, default),
    M > 1 a 16-row-padded tensor-core product. The RMSNorm prologue multiplies by the norm
    weight per tile and by 1/rms at the end (no separate pass over x). Returns out [M, N].
    """
    m = x.shape[0]
    n, k = weight.shape
    assert m <= 16, "skinny_linear is for decode batches of at most 16 rows"
    if out is None:
        out = torch.empty(m, n, dtype=weight.dtype, device=x.device)
    pro = {"none": 0, "rmsnorm": 1, "silu_mul": 2}[prologue]
    if use_dot is None:
        use_dot = m > 1
    assert use_dot or m == 1
    if use_dot:
        block_k = block_k or 256
        num_warps = num_warps or 4
        num_stages = num_stages or 4
        if block_n is None:
            target = 2 * num_sms(x.device)
            block_n = 64 if n // 64 >= target else 32 if n // 32 >= target else 16
    else:  # tuned on the H200 at M=1 (kernels/NOTES.md): ~5 row tiles per SM, 8-16 KB loads
        block_n = block_n or (16 if n < 150 * num_sms(x.device) else 32)
        block_k = block_k or (512 if n // block_n < 3 * num_sms(x.device) else 256)
        num_warps = num_warps or 4
        num_stages = num_stages or 3
    res = residual if residual is not None else out
    _skinny_kernel[(triton.cdiv(n, block_n),)](
        x, weight, out, res, norm_weight if norm_weight is not None else weight, m, n, k, eps,
        x.stride(0), weight.stride(0), out.stride(0), res.stride(0),
        PRO=pro, RES=residual is not None, BM=16 if use_dot else 1, BN=block_n, BK=block_k, F32=INTERPRET,
        num_warps=num_warps, num_stages=num_stages)
    return out
