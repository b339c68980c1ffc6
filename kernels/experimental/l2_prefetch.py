"""L2 prefetch of a GEMV's own weight rows before ``griddepcontrol.wait`` (Hopper, Triton).

What is modelled: in a one-token LLaMA step the o-projection GEMV follows the latency-bound
attention chain (decode + merge, ~8 us a layer at 7B, context 512). Its programs become resident
during that chain (programmatic dependent launch) and load the first ``PRE`` columns of their
rows into registers before waiting; the register file caps that at about a third of the 33.5 MB
weight (kernels/NOTES.md, session 4). Here each resident program also asks L2 for the rest of
its rows (columns ``PRE..K``) and, optionally, for the whole rows of program ``pid + AHEAD``
(a program that is not resident yet), with ``cp.async.bulk.prefetch.L2.global`` (TMA, sm_90;
one instruction per row). The prefetch is a hint: no completion, no effect on results, and no
other kernel waits for it (session 4 run 1: prefetching from extra programs of the rope or
decode kernels lost 0.05-0.38 ms a step; the kernel after them appeared to wait for the
prefetch, an inference from timings only).

:func:`rest_rows` computes (address, bytes) per thread; :func:`prefetch_bulk` issues them (or,
``MARK``, stores 1 at the first and last byte of each range, for interpreter tests).
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def rest_rows(w_ptr, pid, N, K, stride_w, BN: tl.constexpr, PRE: tl.constexpr,
              MODE: tl.constexpr, AHEAD: tl.constexpr, THREADS: tl.constexpr):
    """Per thread i: byte address and size (0 = nothing) of the range to prefetch. Threads
    i < BN: columns PRE..K of this program's row i; with MODE 2, threads BN <= i < 2 BN: all
    of row i - BN of program ``pid + AHEAD``. W is [N, K] with row stride ``stride_w``."""
    i = tl.arange(0, THREADS)
    own = i < BN
    row = tl.where(own, pid * BN + i, (pid + AHEAD) * BN + i - BN)
    if MODE == 2:
        valid = (i < 2 * BN) & (row < N)
    else:
        valid = own & (row < N)
    col = tl.where(own, PRE, 0)
    esize: tl.constexpr = w_ptr.dtype.element_ty.primitive_bitwidth // 8
    size = tl.where(valid, tl.maximum(K - col, 0) * esize, 0)
    addr = w_ptr.to(tl.pointer_type(tl.int8)) + (row.to(tl.int64) * stride_w + col) * esize
    return addr, size


@triton.jit
def prefetch_bulk(addr, size, MARK: tl.constexpr = False):
    """``cp.async.bulk.prefetch.L2.global [addr], size`` where size > 0 (16-byte multiples)."""
    if MARK:
        one = tl.full(addr.shape, 1, tl.int8)
        tl.store(addr, one, mask=size > 0)
        tl.store(addr + size - 1, one, mask=size > 0)
    else:
        tl.inline_asm_elementwise(
            "{ .reg .pred p; setp.gt.s32 p, $2, 0;"
            " @p cp.async.bulk.prefetch.L2.global [$1], $2; } mov.u32 $0, 0;",
            "=r,l,r", [addr, size.to(tl.int32)], dtype=tl.int32, is_pure=False, pack=1)


__all__ = ["prefetch_bulk", "rest_rows"]
