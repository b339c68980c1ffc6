"""Merge in the epilogue: the last program to finish a (sequence, query head) merges its states.

The split-KV kernels write one partial state (fp32 o [D], log2 LSE) per (sequence, query head,
slot) and, today, a second launch merges them (:func:`parrotsim.kernels.paged_decode.launch_merge`).
Here each program, after storing its partial states, adds 1 to an int32 counter per (sequence,
query head) row it wrote (``tl.atomic_add``, acq_rel, GPU scope, after a CTA barrier so that the
release covers the stores of every thread of the program); the program that sees the count
reach ``total`` (the number of slots of that row) was the last one, reads all slots back
after a second barrier (``.cg`` loads, past the non-coherent L1), writes the output and natural-log LSE and puts the
counter back to 0 for the next launch. No merge launch, no extra stream.

Counters: one zeroed int32 per (sequence, query head), kept per device (:func:`counters`) and
reused by every launch; kernels that use them must not run at the same time on two streams
(pass ``counters=`` buffers of your own for that). A launch that dies midway leaves them dirty.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from parrotsim.kernels._common import INTERPRET, LOG2E
from parrotsim.kernels.decode_tile import decode_tile

_COUNTERS: dict[torch.device, torch.Tensor] = {}


def counters(device: torch.device, n: int) -> torch.Tensor:
    """A zeroed int32 buffer of at least ``n`` counters on ``device``, kept between calls (the
    merging programs zero what they used). Call once outside CUDA-graph capture so the buffer
    is not allocated inside a graph."""
    buf = _COUNTERS.get(device)
    if buf is None or buf.numel() < n:
        buf = torch.zeros(max(n, 4096), dtype=torch.int32, device=device)
        _COUNTERS[device] = buf
    return buf


@triton.jit
def merge_if_last(po_ptr, plse_ptr, cnt_ptr, out_ptr, lse_ptr, seq, heads, rmask, HQ, n_slots,
                  total, stride_ob, stride_oh, D: tl.constexpr, BLOCK_S: tl.constexpr):
    """Count this program's stored partial states of rows (``seq``, ``heads``) [R] (mask
    ``rmask``); merge the rows whose count reaches ``total`` (all ``n_slots`` slots written)."""
    tl.debug_barrier()  # every thread's partial-state stores precede the releases below
    row = (seq * HQ + heads).to(tl.int64)
    old = tl.atomic_add(cnt_ptr + row, 1, mask=rmask, sem="acq_rel", scope="gpu")
    last = rmask & (old == total - 1)
    if tl.max(last.to(tl.int32), 0) > 0:
        tl.debug_barrier()  # the threads that load a row come after the one that acquired it
        tl.store(cnt_ptr + row, 0, mask=last)
        offs_s = tl.arange(0, BLOCK_S)
        offs_d = tl.arange(0, D)
        base = row * n_slots
        ls = tl.load(plse_ptr + base[:, None] + offs_s[None, :],
                     mask=last[:, None] & (offs_s[None, :] < n_slots), other=float("-inf"),
                     cache_modifier=".cg")
        m = tl.max(ls, 1)  # the rows' largest slot LSE, from one load of all slots
        m = tl.where(m == float("-inf"), 0.0, m)
        acc = tl.zeros([seq.shape[0], D], tl.float32)
        wsum = tl.zeros([seq.shape[0]], tl.float32)
        o_ptrs = po_ptr + base[:, None] * D + offs_d[None, :]
        o_next = tl.load(o_ptrs, mask=last[:, None], other=0.0, cache_modifier=".cg")
        l_next = tl.load(plse_ptr + base, mask=last, other=float("-inf"), cache_modifier=".cg")
        for s in range(0, n_slots):  # slot s + 1 is loaded while slot s is added
            o = o_next
            w = tl.exp2(l_next - m)
            more = last & (s + 1 < n_slots)
            o_next = tl.load(o_ptrs + (s + 1) * D, mask=more[:, None], other=0.0,
                             cache_modifier=".cg")
            l_next = tl.load(plse_ptr + base + s + 1, mask=more, other=float("-inf"),
                             cache_modifier=".cg")
            wsum += w
            acc += tl.where(w[:, None] > 0, o * w[:, None], 0.0)  # 0 x NaN of an unwritten slot
        out = acc / tl.where(wsum > 0, wsum, 1.0)[:, None]
        tl.store(out_ptr + seq[:, None] * stride_ob + heads[:, None] * stride_oh
                 + offs_d[None, :], out.to(out_ptr.dtype.element_ty), mask=last[:, None])
        lse = tl.where(wsum > 0, m + tl.log2(tl.where(wsum > 0, wsum, 1.0)), float("-inf"))
        tl.store(lse_ptr + seq * HQ + heads, lse * 0.6931471805599453, mask=last)


@triton.jit(do_not_specialize=["n_slots", "NUM_SPLITS"])
def _decode_last_kernel(
    q_ptr, k_ptr, v_ptr, bt_ptr, lens_ptr, po_ptr, plse_ptr, cnt_ptr, out_ptr, lse_ptr,
    qk_scale, HQ, n_slots,
    stride_qb, stride_qh, stride_kp, stride_kt, stride_kh, stride_vp, stride_vt, stride_vh,
    stride_btb, stride_ob, stride_oh, NUM_SPLITS,
    G: tl.constexpr, BLOCK_H: tl.constexpr, BLOCK_N: tl.constexpr,
    D: tl.constexpr, PAGE: tl.constexpr, F32: tl.constexpr, BLOCK_S: tl.constexpr,
):
    b = tl.program_id(0)
    kvh = tl.program_id(1)
    split = tl.program_id(2)
    decode_tile(q_ptr, k_ptr, v_ptr, bt_ptr, lens_ptr, po_ptr, plse_ptr, po_ptr, plse_ptr,
                b, kvh, split, split, qk_scale, HQ, n_slots,
                stride_qb, stride_qh, stride_kp, stride_kt, stride_kh,
                stride_vp, stride_vt, stride_vh, stride_btb, 0, 0,
                NUM_SPLITS, 0, 0, G, BLOCK_H, BLOCK_N, D, PAGE, False, F32, False)
    offs_h = tl.arange(0, BLOCK_H)
    merge_if_last(po_ptr, plse_ptr, cnt_ptr, out_ptr, lse_ptr, b + offs_h * 0, kvh * G + offs_h,
                  offs_h < G, HQ, n_slots, NUM_SPLITS, stride_ob, stride_oh, D, BLOCK_S)


def _block_s(n_slots: int) -> int:
    """Slots of the one LSE load of a merge: at least 64, so one compile serves every split count."""
    return max(64, triton.next_power_of_2(n_slots))


def launch_decode_last(q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor,
                       block_tables: torch.Tensor, seq_lens: torch.Tensor, sm_scale: float,
                       num_splits: int, out: torch.Tensor, lse: torch.Tensor,
                       block_n: int = 64, num_warps: int = 4, num_stages: int = 3,
                       cnt: torch.Tensor | None = None) -> None:
    """One launch of the split-KV paged decode kernel (``num_splits`` >= 1) whose last
    finishing split of each (sequence, KV head) merges: writes ``out`` [B, Hq, D] and the
    natural-log ``lse`` [B, Hq] (contiguous)."""
    B, HQ, D = q.shape
    HKV = k_cache.shape[2]
    G = HQ // HKV
    po = torch.empty(B, HQ, num_splits, D, dtype=torch.float32, device=q.device)
    plse = torch.empty(B, HQ, num_splits, dtype=torch.float32, device=q.device)
    cnt = counters(q.device, B * HQ) if cnt is None else cnt
    _decode_last_kernel[(B, HKV, num_splits)](
        q, k_cache, v_cache, block_tables, seq_lens, po, plse, cnt, out, lse,
        sm_scale * LOG2E, HQ, num_splits,
        q.stride(0), q.stride(1), *k_cache.stride()[:3], *v_cache.stride()[:3],
        block_tables.stride(0), out.stride(0), out.stride(1), num_splits,
        G=G, BLOCK_H=max(16, triton.next_power_of_2(G)), BLOCK_N=block_n, D=D,
        PAGE=k_cache.shape[1], F32=INTERPRET, BLOCK_S=_block_s(num_splits),
        num_warps=num_warps, num_stages=num_stages)


__all__ = ["_block_s", "counters", "launch_decode_last", "merge_if_last"]
