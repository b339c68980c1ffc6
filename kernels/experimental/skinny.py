"""Skinny decode GEMM (Triton), measured slower than cuBLAS in the LLaMA decode step.

:func:`skinny_linear` - ``y = prologue(x) @ W^T (+ residual)`` for M <= 16 rows, streaming W
once; prologue "rmsnorm" or "silu_mul" is recomputed per tile so a decode layer needs only four
weight kernels and one rope/cache kernel besides attention. kernels/NOTES.md: a 7B decode step
took 4.89 ms with it against 4.46 ms with cuBLAS, so the model's default is cuBLAS; selected by
:class:`parrotsim.kernels.experimental.llama_variants.LlamaVariants` (``skinny_max_tokens``).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from parrotsim.kernels._common import INTERPRET, num_sms


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


__all__ = ["skinny_linear"]
