"""The one-token GEMV with L2 self-prefetch (measured slower in every form, session 4).

:func:`gemv_prefetch` is :func:`parrotsim.kernels.gemv.gemv` plus ``prefetch``: 0 off; 1 each
program prefetches the rest of its rows (columns PRE..K) into L2 before
``griddepcontrol.wait``; n > 1 also whole rows of program ``pid + n``
(:mod:`parrotsim.kernels.experimental.l2_prefetch`). CUDA only, bf16/fp16 rows of 16-byte
multiples; otherwise (and with ``prefetch=0``) it is :func:`~parrotsim.kernels.gemv.gemv`
itself. The kernel is the plain GEMV's, :func:`~parrotsim.kernels.gemv.gemv_preload` then
:func:`~parrotsim.kernels.gemv.gemv_rest`, with the prefetch issued between the two.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from parrotsim.kernels._common import INTERPRET
from parrotsim.kernels.experimental.l2_prefetch import prefetch_bulk, rest_rows
from parrotsim.kernels.gemv import gdc_launch_if, gemv, gemv_preload, gemv_rest, gemv_tiles


@triton.jit
def _gemv_prefetch_kernel(x_ptr, w_ptr, out_ptr, res_ptr, nw_ptr, N, K, eps, stride_w,
                          PRO: tl.constexpr, RES: tl.constexpr, BN: tl.constexpr,
                          BK: tl.constexpr, PRE: tl.constexpr, STAGES: tl.constexpr,
                          PDL: tl.constexpr, PF: tl.constexpr, AHEAD: tl.constexpr,
                          THREADS: tl.constexpr):
    gdc_launch_if(PDL)
    offs_n = tl.program_id(0) * BN + tl.arange(0, BN)
    nmask = offs_n < N
    w_rows, offs_p, pmask, w_pre = gemv_preload(w_ptr, offs_n, nmask, K, stride_w, PRE)
    addr, size = rest_rows(w_ptr, tl.program_id(0), N, K, stride_w, BN, PRE, PF, AHEAD, THREADS)
    prefetch_bulk(addr, size)
    acc = gemv_rest(x_ptr, nw_ptr, w_rows, offs_p, pmask, w_pre, nmask, K, eps, PRO, BN, BK,
                    PRE, STAGES, PDL)
    if RES:
        acc += tl.load(res_ptr + offs_n, mask=nmask, other=0.0).to(tl.float32)
    tl.store(out_ptr + offs_n, acc.to(out_ptr.dtype.element_ty), mask=nmask)


def gemv_prefetch(x: torch.Tensor, weight: torch.Tensor, prologue: str = "none",
                  norm_weight: torch.Tensor | None = None, eps: float = 1e-5,
                  residual: torch.Tensor | None = None, out: torch.Tensor | None = None,
                  pdl: bool = True, tiles: tuple[int, int, int, int, int] | None = None,
                  prefetch: int = 0) -> torch.Tensor:
    """:func:`parrotsim.kernels.gemv.gemv` (same arguments) with the L2 self-prefetch
    ``prefetch`` (see module docstring)."""
    n, k = weight.shape
    bn, bk, pre, warps, stages = tiles or gemv_tiles(n, k)
    esize = weight.element_size()
    pf_ok = not INTERPRET and (k * esize) % 16 == 0 and (weight.stride(0) * esize) % 16 == 0
    pf = 0 if not (prefetch and pf_ok and 2 * bn <= 32 * warps) else 1 if prefetch == 1 else 2
    if pf == 0:
        return gemv(x, weight, prologue, norm_weight, eps, residual, out, pdl, tiles)
    assert x.shape[0] == 1, "gemv takes one row"
    if out is None:
        out = torch.empty(1, n, dtype=weight.dtype, device=x.device)
    pro = {"none": 0, "rmsnorm": 1, "silu_mul": 2}[prologue]
    _gemv_prefetch_kernel[(triton.cdiv(n, bn),)](
        x, weight, out, residual if residual is not None else out,
        norm_weight if norm_weight is not None else weight, n, k, eps, weight.stride(0),
        PRO=pro, RES=residual is not None, BN=bn, BK=bk, PRE=pre, STAGES=stages,
        PDL=pdl, PF=pf, AHEAD=prefetch if pf == 2 else 0, THREADS=32 * warps,
        num_warps=warps, num_stages=stages, launch_pdl=pdl)
    return out


__all__ = ["gemv_prefetch"]
