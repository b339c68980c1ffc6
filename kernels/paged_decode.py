"""Paged split-KV decode attention (Triton): the fair, non-sharing baseline.

One query token per sequence, KV in pages of 16 tokens addressed through a block table,
grouped-query attention (the G query heads of one KV head are the rows of a ``tl.dot``, padded
to 16), split-KV with a log-sum-exp reduce. Grid order puts the batch index fastest, so programs
that run together read the same pages when block tables share physical prefix pages (the L2
reuse that vLLM/SGLang prefix caching gets).

``decode_tile`` and ``merge_kernel`` are reused by the shared-prefix kernel for the suffix phase.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from parrotsim.kernels._common import (
    INTERPRET,
    LOG2E,
    PAGE_SIZE,
    default_scale,
    device_name,
    num_sms,
)
from parrotsim.kernels.decode_tile import decode_tile, merge_kernel
from parrotsim.kernels.gemv import gdc_launch_if, gdc_wait_if
from parrotsim.kernels.last_merge import launch_decode_last
from parrotsim.kernels.tuning_table import PagedChoice, table_for


@triton.jit
def _decode_kernel(
    q_ptr, k_ptr, v_ptr, bt_ptr, lens_ptr, po_ptr, plse_ptr, out_ptr, lse_ptr,
    slot0, qk_scale, HQ, n_slots,
    stride_qb, stride_qh, stride_kp, stride_kt, stride_kh, stride_vp, stride_vt, stride_vh,
    stride_btb, stride_ob, stride_oh, NUM_SPLITS, pre_ptr, pre_len,
    G: tl.constexpr, BLOCK_H: tl.constexpr, BLOCK_N: tl.constexpr,
    D: tl.constexpr, PAGE: tl.constexpr, DIRECT: tl.constexpr, F32: tl.constexpr,
    MERGE: tl.constexpr, PDL: tl.constexpr = False, PREFIX: tl.constexpr = False,
):
    gdc_launch_if(PDL)
    gdc_wait_if(PDL)
    b = tl.program_id(0)
    kvh = tl.program_id(1)
    split = tl.program_id(2)
    decode_tile(q_ptr, k_ptr, v_ptr, bt_ptr, lens_ptr, po_ptr, plse_ptr, out_ptr, lse_ptr,
                b, kvh, split, slot0 + split, qk_scale, HQ, n_slots,
                stride_qb, stride_qh, stride_kp, stride_kt, stride_kh,
                stride_vp, stride_vt, stride_vh, stride_btb, stride_ob, stride_oh,
                NUM_SPLITS, pre_ptr, pre_len, G, BLOCK_H, BLOCK_N, D, PAGE, DIRECT, F32, MERGE,
                PREFIX)


def choose_num_splits(programs: int, max_len: int, device: torch.device,
                      min_split_tokens: int = 256, waves: float = 2.0) -> int:
    """KV splits so that ``programs * splits`` fills ``waves`` waves of SMs, each split holding
    at least ``min_split_tokens`` of the longest possible sequence (``max_len`` tokens)."""
    want = -(-int(waves * num_sms(device)) // max(programs, 1))
    cap = max(1, -(-max_len // min_split_tokens))
    return int(max(1, min(want, cap, 64)))


def wave_splits(programs: int, max_len: int, sms: int, resident: int = 4,
                overhead_tokens: int = 256, min_split_tokens: int = 128) -> int:
    """KV splits that minimise the wave-quantised time ``ceil(programs * s / (sms * resident))
    * (ceil(max_len / s) + overhead_tokens)``: each wave of resident programs lasts as long as
    one split's tokens plus a fixed per-program cost (in tokens), and a last wave that is only
    partly full costs a whole one. The three constants were picked on the H200 split sweep
    (kernels/results/session6: 36 uniform batches, G 1/4/8; in-sample): there this pick runs within 0.5 % of the best split count
    on average (worst 4 %); :func:`choose_num_splits` is within 1.4 % (worst 9 %), losing most
    at long contexts with few KV heads. The tuner tries it (:mod:`parrotsim.kernels.tune`); the
    default stays :func:`choose_num_splits`, which the shipped H200 profiles were measured with."""
    slots = max(1, sms * resident)
    best_s, best_t = 1, None
    for s in range(1, 65):
        if s > 1 and max_len / s < min_split_tokens:
            break
        t = -(-programs * s // slots) * (-(-max_len // s) + overhead_tokens)
        if best_t is None or t < best_t:
            best_s, best_t = s, t
    return best_s


def choose_config(batch: int, num_kv_heads: int, group: int, max_len: int,
                  device: torch.device) -> PagedChoice:
    """Splits and tile for a batch: the GPU's tuning table (:mod:`parrotsim.kernels.tuning_table`)
    at the nearest measured shape, else :func:`choose_num_splits` with the 64 x 4 warps x 3
    stages tile. Splits are capped so that every split holds at least one tile of tokens."""
    table = table_for(device_name(device))
    choice = table.paged(group, batch, max_len) if table is not None else None
    if choice is None:
        return PagedChoice(choose_num_splits(batch * num_kv_heads, max_len, device))
    cap = max(1, -(-max_len // choice.block_n))
    return PagedChoice(max(1, min(choice.splits, cap, 64)), choice.block_n, choice.warps,
                       choice.stages)


def launch_decode(q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor,
                  block_tables: torch.Tensor, seq_lens: torch.Tensor, sm_scale: float,
                  num_splits: int, out: torch.Tensor | None, lse: torch.Tensor | None,
                  po: torch.Tensor | None, plse: torch.Tensor | None, slot0: int = 0,
                  block_n: int = 64, num_warps: int = 4, num_stages: int = 3,
                  merge: bool = False, pdl: bool = False,
                  prefix: tuple[torch.Tensor, int] | None = None) -> None:
    """Launch the split-KV decode kernel. With ``po``/``plse`` (fp32 [B, Hq, S, D] / [B, Hq, S])
    it writes partial states into slots ``slot0 .. slot0+num_splits-1``; else (one split) it
    writes ``out`` [B, Hq, D] and natural-log ``lse`` [B, Hq] directly. ``merge`` (one split,
    ``out`` and ``po`` given): merge the states in slots ``0..slot0-1`` and write ``out``.
    ``prefix`` (pages, tokens): see :func:`paged_decode_attention`."""
    B, HQ, D = q.shape
    _, page, HKV, _ = k_cache.shape
    G = HQ // HKV
    direct = out is not None
    assert direct == (num_splits == 1 and (po is None or merge))
    dummy = q if po is None else po
    _decode_kernel[(B, HKV, num_splits)](
        q, k_cache, v_cache, block_tables, seq_lens,
        dummy if po is None else po, dummy if po is None else plse,
        out if direct else dummy, lse if direct else dummy,
        slot0, sm_scale * LOG2E, HQ, 1 if po is None else po.shape[2],
        q.stride(0), q.stride(1), *k_cache.stride()[:3], *v_cache.stride()[:3],
        block_tables.stride(0), *(out.stride()[:2] if direct else (0, 0)), num_splits,
        *(prefix or (block_tables, 0)),
        G=G, BLOCK_H=max(16, triton.next_power_of_2(G)),
        BLOCK_N=block_n, D=D, PAGE=page, DIRECT=direct, F32=INTERPRET, MERGE=merge,
        PDL=pdl and not INTERPRET, PREFIX=prefix is not None, num_warps=num_warps,
        num_stages=num_stages,
        **_pdl_kw(pdl),
    )


def _pdl_kw(pdl: bool) -> dict:
    return {"launch_pdl": True} if pdl and not INTERPRET else {}


def launch_merge(po: torch.Tensor, plse: torch.Tensor, out: torch.Tensor,
                 lse: torch.Tensor, pdl: bool = False, num_warps: int = 4,
                 lse2: bool = False) -> None:
    """Merge partial states ``po`` [B, Hq, S, D] / ``plse`` [B, Hq, S] into ``out``, ``lse``
    (``lse`` [B, Hq] contiguous; natural log, or log2 with ``lse2``)."""
    B, HQ, S, D = po.shape
    merge_kernel[(B, HQ)](po, plse, out, lse, HQ, S, out.stride(0), out.stride(1),
                          D=D, BLOCK_S=max(2, triton.next_power_of_2(S)),
                          PDL=pdl and not INTERPRET, LSE2=lse2, num_warps=num_warps,
                          **_pdl_kw(pdl))


def paged_decode_attention(
    q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor,
    block_tables: torch.Tensor, seq_lens: torch.Tensor, sm_scale: float | None = None,
    num_splits: int | None = None, block_n: int | None = None, num_warps: int | None = None,
    num_stages: int | None = None,
    out: torch.Tensor | None = None, lse: torch.Tensor | None = None, pdl: bool = False,
    merge_warps: int = 4, merge: str = "kernel",
    prefix: tuple[torch.Tensor, int] | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Decode attention of one query token per sequence over a paged KV cache.

    Args:
        q: [B, Hq, D] query (bf16/fp16), Hq a multiple of Hkv.
        k_cache, v_cache: [num_pages, 16, Hkv, D] (NHD), same dtype as q.
        block_tables: int32 [B, max_pages]; token t of sequence b lives in page
            ``block_tables[b, t // 16]`` at slot ``t % 16``.
        seq_lens: int32 [B], KV tokens per sequence (0 allowed: output 0, lse -inf).
        sm_scale: softmax scale (default 1/sqrt(D)).
        num_splits: KV splits per sequence. Default (None): splits and tile from
            :func:`choose_config` by (batch, Hq/Hkv, table width), so no host sync; fixed
            splits keep CUDA-graph capture valid. With ``num_splits`` given, unset tile fields
            take the 64 x 4 warps x 3 stages default.
        block_n, num_warps, num_stages: tile (tokens per step, warps, pipeline stages);
            each overrides the chosen configuration's field.
        pdl: launch with programmatic dependent launch (decode step chains, CUDA only).
        merge_warps: warps of the merge kernel (several splits only).
        merge: how several splits are merged: "kernel" (default: a second launch) or "last"
            (opt-in: one launch, the last split to finish merges;
            :mod:`parrotsim.kernels.last_merge`; no PDL).
        prefix: ``(pages, tokens)``: every sequence starts with the ``tokens`` tokens of the
            shared pages ``pages`` (int32; the last may be partly filled) and
            ``block_tables`` holds the rest from its first slot, ``seq_lens`` counting the
            rest alone (the paged kernel over a fork group's shared pages, read once per
            sequence, with no table built and no length added on the GPU). Not with
            ``merge="last"``.
    Returns:
        ``(out [B, Hq, D] q.dtype, lse [B, Hq] fp32)`` where ``lse`` is the natural-log
        ``ln sum_j exp(sm_scale * q.k_j)``.
    """
    B, HQ, D = q.shape
    scale = default_scale(D, sm_scale)
    cfg = PagedChoice(num_splits or 1)
    if num_splits is None:
        width = block_tables.shape[1] * k_cache.shape[1] + (prefix[1] if prefix else 0)
        cfg = choose_config(B, k_cache.shape[2], HQ // k_cache.shape[2], width, q.device)
        num_splits = cfg.splits
    block_n = block_n or cfg.block_n
    num_warps = num_warps or cfg.warps
    num_stages = num_stages or cfg.stages
    out = torch.empty_like(q) if out is None else out
    lse = torch.empty(B, HQ, dtype=torch.float32, device=q.device) if lse is None else lse
    if num_splits == 1:
        launch_decode(q, k_cache, v_cache, block_tables, seq_lens, scale, 1, out, lse, None,
                      None, block_n=block_n, num_warps=num_warps, num_stages=num_stages,
                      pdl=pdl, prefix=prefix)
        return out, lse
    if merge == "last" and prefix is not None:
        raise ValueError("prefix is not supported with merge='last'")
    if merge == "last":
        launch_decode_last(q, k_cache, v_cache, block_tables, seq_lens, scale, num_splits, out,
                           lse, block_n=block_n, num_warps=num_warps, num_stages=num_stages)
        return out, lse
    if merge != "kernel":
        raise ValueError(f"unknown merge {merge!r}")
    po = torch.empty(B, HQ, num_splits, D, dtype=torch.float32, device=q.device)
    plse = torch.empty(B, HQ, num_splits, dtype=torch.float32, device=q.device)
    launch_decode(q, k_cache, v_cache, block_tables, seq_lens, scale, num_splits, None, None,
                  po, plse, block_n=block_n, num_warps=num_warps, num_stages=num_stages,
                  pdl=pdl, prefix=prefix)
    launch_merge(po, plse, out, lse, pdl=pdl, num_warps=merge_warps)
    return out, lse


__all__ = ["PAGE_SIZE", "choose_config", "choose_num_splits", "paged_decode_attention"]
