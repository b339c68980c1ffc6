"""Single-token GEMV for the decode step (Triton), with programmatic dependent launch (PDL).

``out[n] = sum_k prologue(x)[k] * W[n, k] (+ residual[n])`` for one activation row: W [N, K]
bf16 is streamed once (the whole cost: 2 N K bytes), each program owning ``BN`` rows of W.

Why a new kernel (kernels/NOTES.md, run 2): a batch-1 LLaMA-7B step is ~10 dependent kernels a
layer, and each one pays launch latency, pipeline fill and a drain tail on an otherwise idle
GPU. Here

* with ``pdl=True`` the kernel is launched with Hopper's programmatic dependent launch and
  calls ``griddepcontrol.launch_dependents`` first thing, so the *next* kernel's programs are
  resident before this one drains; the first ``PRE`` columns of this program's W rows (which do
  not depend on the previous kernel) are loaded *before* ``griddepcontrol.wait``, i.e. while
  the previous kernel is still finishing;
* the loop accumulates ``x * W`` elementwise into a [BN, BK] fp32 tile and reduces once at the
  end (no cross-thread reduction, hence no barrier, per K step);
* prologue ``"rmsnorm"`` (x * norm weight, sum of squares on the fly, 1/rms applied to the
  result) or ``"silu_mul"`` (x = [gate | up]) and the residual epilogue remove the separate
  norm / SiLU / add kernels.

PDL needs sm_90 and a CUDA launch; on the CPU interpreter ``pdl`` is ignored. The L2
self-prefetch variant measured slower (session 4) is
:func:`parrotsim.kernels.experimental.gemv_prefetch.gemv_prefetch`, built from the two halves
of :func:`gemv_acc` (:func:`gemv_preload`, :func:`gemv_rest`).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from parrotsim.kernels._common import INTERPRET


@triton.jit
def gdc_wait_if(PDL: tl.constexpr):
    """``griddepcontrol.wait`` (wait for the previous kernel's completion and memory) if PDL."""
    if PDL:
        tl.extra.cuda.gdc_wait()


@triton.jit
def gdc_launch_if(PDL: tl.constexpr):
    """``griddepcontrol.launch_dependents`` (let the next PDL kernel launch now) if PDL."""
    if PDL:
        tl.extra.cuda.gdc_launch_dependents()


@triton.jit
def _prologue(x_ptr, nw_ptr, offs, mask, K, PRO: tl.constexpr):
    """Activation chunk after the prologue (fp32) and its squares (RMSNorm's sum)."""
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    sq = x * x
    if PRO == 1:
        x = x * tl.load(nw_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    elif PRO == 2:
        u = tl.load(x_ptr + K + offs, mask=mask, other=0.0).to(tl.float32)
        a = (x / (1.0 + tl.exp(-x))).to(nw_ptr.dtype.element_ty).to(tl.float32)
        x = a * u
    return x, sq


@triton.jit
def gemv_preload(w_ptr, offs_n, nmask, K, stride_w, PRE: tl.constexpr):
    """First half of :func:`gemv_acc`, before ``griddepcontrol.wait``: the W row pointers of
    ``offs_n``, the first PRE column offsets and mask, and those columns of W, loaded."""
    w_rows = w_ptr + offs_n[:, None].to(tl.int64) * stride_w
    offs_p = tl.arange(0, PRE)
    pmask = offs_p < K
    w_pre = tl.load(w_rows + offs_p[None, :], mask=nmask[:, None] & pmask[None, :], other=0.0)
    return w_rows, offs_p, pmask, w_pre


@triton.jit
def gemv_rest(x_ptr, nw_ptr, w_rows, offs_p, pmask, w_pre, nmask, K, eps, PRO: tl.constexpr,
              BN: tl.constexpr, BK: tl.constexpr, PRE: tl.constexpr, STAGES: tl.constexpr,
              PDL: tl.constexpr):
    """Second half of :func:`gemv_acc`: wait for the previous kernel (PDL), then the fp32 dot
    products of the preloaded columns and of the rest of the rows, RMSNorm scale applied."""
    gdc_wait_if(PDL)  # x (and the residual) come from the previous kernel
    xp, sqp = _prologue(x_ptr, nw_ptr, offs_p, pmask, K, PRO)
    acc = tl.sum(xp[None, :] * w_pre.to(tl.float32), 1)
    offs_k = tl.arange(0, BK)
    acc2 = tl.zeros([BN, BK], tl.float32)
    sq2 = tl.zeros([BK], tl.float32)
    for k0 in tl.range(PRE, K, BK, num_stages=STAGES):
        kk = k0 + offs_k
        km = kk < K
        xk, sqk = _prologue(x_ptr, nw_ptr, kk, km, K, PRO)
        wv = tl.load(w_rows + kk[None, :], mask=nmask[:, None] & km[None, :], other=0.0)
        acc2 += xk[None, :] * wv.to(tl.float32)
        sq2 += sqk
    acc += tl.sum(acc2, 1)
    if PRO == 1:
        acc = acc * tl.rsqrt((tl.sum(sqp, 0) + tl.sum(sq2, 0)) / K + eps)
    return acc


@triton.jit
def gemv_acc(x_ptr, w_ptr, nw_ptr, offs_n, nmask, K, eps, stride_w, PRO: tl.constexpr,
             BN: tl.constexpr, BK: tl.constexpr, PRE: tl.constexpr, STAGES: tl.constexpr,
             PDL: tl.constexpr):
    """fp32 ``prologue(x) . W[offs_n, :]`` for the rows ``offs_n`` (RMSNorm scale applied);
    the first PRE columns of W are loaded before ``griddepcontrol.wait``."""
    w_rows, offs_p, pmask, w_pre = gemv_preload(w_ptr, offs_n, nmask, K, stride_w, PRE)
    return gemv_rest(x_ptr, nw_ptr, w_rows, offs_p, pmask, w_pre, nmask, K, eps, PRO, BN, BK,
                     PRE, STAGES, PDL)


@triton.jit
def _gemv_kernel(x_ptr, w_ptr, out_ptr, res_ptr, nw_ptr, N, K, eps, stride_w,
                 PRO: tl.constexpr, RES: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                 PRE: tl.constexpr, STAGES: tl.constexpr, PDL: tl.constexpr):
    gdc_launch_if(PDL)
    offs_n = tl.program_id(0) * BN + tl.arange(0, BN)
    nmask = offs_n < N
    acc = gemv_acc(x_ptr, w_ptr, nw_ptr, offs_n, nmask, K, eps, stride_w, PRO, BN, BK, PRE,
                   STAGES, PDL)
    if RES:
        acc += tl.load(res_ptr + offs_n, mask=nmask, other=0.0).to(tl.float32)
    tl.store(out_ptr + offs_n, acc.to(out_ptr.dtype.element_ty), mask=nmask)


def gemv_tiles(n: int, k: int) -> tuple[int, int, int, int, int]:
    """Default ``(BN, BK, PRE, num_warps, num_stages)`` for a [n, k] weight: the fastest of a
    sweep over LLaMA-7B's matrices on the H200 (8-layer PDL chains, kernels/NOTES.md). Few
    output rows (o, down: N = 4096) want narrow row tiles or 8 warps and a deep prefetch."""
    if n <= 8192:
        tiles = (4, 1024, 2048, 4, 3) if k <= 4096 else (16, 512, 2048, 8, 3)
    elif n >= 16384:
        tiles = (8, 256, 1024, 2, 4)
    else:
        tiles = (32, 256, 512, 4, 3)
    bn, bk, pre, warps, stages = tiles
    return bn, bk, min(pre, triton.next_power_of_2(k)), warps, stages


def gemv(x: torch.Tensor, weight: torch.Tensor, prologue: str = "none",
         norm_weight: torch.Tensor | None = None, eps: float = 1e-5,
         residual: torch.Tensor | None = None, out: torch.Tensor | None = None,
         pdl: bool = True, tiles: tuple[int, int, int, int, int] | None = None) -> torch.Tensor:
    """``out = prologue(x) @ weight^T (+ residual)`` for a single row.

    Args:
        x: [1, K] bf16 ([1, 2K] = [gate | up] for prologue "silu_mul"), contiguous rows.
        weight: [N, K] bf16, row-major.
        prologue: "none", "rmsnorm" (needs ``norm_weight`` [K]; RMSNorm with ``eps``) or
            "silu_mul".
        residual: optional [1, N] added to the result; may be ``out`` itself (in place).
        out: optional [1, N] output (any float dtype; default weight.dtype).
        pdl: launch with programmatic dependent launch (CUDA only).
        tiles: override ``(BN, BK, PRE, num_warps, num_stages)``; BK and PRE powers of two.
    Returns:
        out [1, N].
    """
    assert x.shape[0] == 1, "gemv takes one row"
    n, k = weight.shape
    if out is None:
        out = torch.empty(1, n, dtype=weight.dtype, device=x.device)
    pro = {"none": 0, "rmsnorm": 1, "silu_mul": 2}[prologue]
    bn, bk, pre, warps, stages = tiles or gemv_tiles(n, k)
    extra = {} if INTERPRET else {"launch_pdl": pdl}
    _gemv_kernel[(triton.cdiv(n, bn),)](
        x, weight, out, residual if residual is not None else out,
        norm_weight if norm_weight is not None else weight, n, k, eps, weight.stride(0),
        PRO=pro, RES=residual is not None, BN=bn, BK=bk, PRE=pre, STAGES=stages,
        PDL=pdl and not INTERPRET, num_warps=warps, num_stages=stages, **extra)
    return out


__all__ = ["gdc_launch_if", "gdc_wait_if", "gemv", "gemv_acc", "gemv_preload", "gemv_rest",
           "gemv_tiles"]
