"""Shared-prefix ("cascade") decode attention (Triton), Parrot's kernel.

A batch of B sequences shares a prefix of ``prefix_len`` tokens stored once in ``prefix_pages``;
each sequence also has its own suffix in its own pages. Phase 1 loads each prefix KV tile once
for *all* queries: the rows of the tensor-core tile are (sequence, query head of this KV head)
pairs, so a [BM, D] x [D, BN] product replaces BM matrix-vector products and the prefix is read
from HBM once instead of B times. Phase 2 is the paged split-KV decode of each suffix
(:func:`parrotsim.kernels.paged_decode.decode_tile`). Both write partial states (o, lse2); a reduce merges
them by log-sum-exp. ``mode="fused"`` runs phases 1 and 2 as one launch (prefix tiles first, then
suffix tiles), ``mode="separate"`` as two, ``mode="concurrent"`` as two launches on two CUDA
streams (fork/join, also inside a captured CUDA graph) so the prefix programs and the suffix
programs share the GPU, each with its own tile configuration (measured fastest for B*G > 32 on
the H200, kernels/NOTES.md). ``mode="paged"`` runs the paged kernel over block tables that
point at the shared prefix pages (the fallback where the cascade is slower); ``mode="auto"``
picks by shape from the GPU's tuning table (:func:`choose_shared`). ``mode="fused_last"``
(opt-in, :mod:`parrotsim.kernels.cascade_last`) is "fused" in one launch: the last program to
finish a (sequence, head) merges it.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import triton
import triton.language as tl

from parrotsim.kernels._common import INTERPRET, LOG2E, default_scale, device_name
from parrotsim.kernels.cascade_last import launch_cascade_last
from parrotsim.kernels.paged_decode import (
    choose_num_splits,
    decode_tile,
    launch_decode,
    launch_merge,
    paged_decode_attention,
)
from parrotsim.kernels.prefix_tile import _prefix_kernel, prefix_tile, prefix_tiles
from parrotsim.kernels.tuning_table import SharedChoice, table_for

_SIDE_STREAMS: dict[torch.device, torch.cuda.Stream] = {}


def _side_stream(device: torch.device) -> torch.cuda.Stream:
    """One extra CUDA stream per device for the prefix phase of ``mode="concurrent"``."""
    if device not in _SIDE_STREAMS:
        _SIDE_STREAMS[device] = torch.cuda.Stream(device)
    return _SIDE_STREAMS[device]


def run_phases(prefix: Callable[[], None], suffix: Callable[[], None], q: torch.Tensor,
               concurrent: bool) -> None:
    """Launch the prefix and the suffix phase: with ``concurrent`` (on CUDA) the prefix on a
    side stream forked from and joined back to the current one (also inside a captured CUDA
    graph), so the two phases' programs share the GPU; else one after the other."""
    if concurrent and q.is_cuda:
        cur = torch.cuda.current_stream(q.device)
        side = _side_stream(q.device)
        side.wait_stream(cur)
        with torch.cuda.stream(side):
            prefix()
        suffix()
        cur.wait_stream(side)
    else:
        prefix()
        suffix()


@triton.jit
def _cascade_kernel(
    q_ptr, k_ptr, v_ptr, pages_ptr, prefix_len, sbt_ptr, slens_ptr, po_ptr, plse_ptr,
    split_len, qk_scale, n_rows, B, HQ, HKV, n_slots, RB, n_prefix_progs,
    stride_qb, stride_qh, stride_kp, stride_kt, stride_kh, stride_vp, stride_vt, stride_vh,
    stride_btb, NSP, NSS, G: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr,
    BLOCK_H: tl.constexpr, BN_S: tl.constexpr, D: tl.constexpr, PAGE: tl.constexpr,
    F32: tl.constexpr,
):
    pid = tl.program_id(0)
    if pid < n_prefix_progs:
        rest = pid // RB
        prefix_tile(q_ptr, k_ptr, v_ptr, pages_ptr, prefix_len, po_ptr, plse_ptr,
                    pid % RB, rest % HKV, rest // HKV, split_len, qk_scale, n_rows, HQ,
                    n_slots, stride_qb, stride_qh, stride_kp, stride_kt, stride_kh,
                    stride_vp, stride_vt, stride_vh, G, BM, BN, D, PAGE, F32)
    else:
        j = pid - n_prefix_progs
        rest = j // B
        split = rest // HKV
        decode_tile(q_ptr, k_ptr, v_ptr, sbt_ptr, slens_ptr, po_ptr, plse_ptr, po_ptr, plse_ptr,
                    j % B, rest % HKV, split, NSP + split, qk_scale, HQ, n_slots,
                    stride_qb, stride_qh, stride_kp, stride_kt, stride_kh,
                    stride_vp, stride_vt, stride_vh, stride_btb, 0, 0,
                    NSS, 0, 0, G, BLOCK_H, BN_S, D, PAGE, False, F32, False)


def choose_shared(batch: int, group: int, prefix_len: int, max_suffix: int,
                  device: torch.device) -> SharedChoice:
    """Mode and splits for mode "auto": the GPU's tuning table at the nearest measured shape;
    without one, the paged kernel for a batch of one (nothing to share: the cascade only adds
    launches), fused when B*G <= 32, else concurrent (measured on the H200, NOTES.md). "paged"
    takes any prefix length (:func:`paged_over_shared_pages`)."""
    table = table_for(device_name(device))
    choice = table.shared(group, batch, prefix_len, max_suffix) if table is not None else None
    if choice is None:
        mode = "paged" if batch == 1 else "fused" if batch * group <= 32 else "concurrent"
        choice = SharedChoice(mode)
    return choice


def paged_over_shared_pages(q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor,
                            prefix_pages: torch.Tensor, prefix_len: int,
                            suffix_block_tables: torch.Tensor, suffix_lens: torch.Tensor,
                            sm_scale: float | None = None, out: torch.Tensor | None = None,
                            lse: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """The paged kernel over every sequence's whole context, the shared prefix's pages read
    once per sequence (how a prefix-caching engine without a cascade kernel serves the batch):
    each program reads the prefix pages, then its sequence's own, from the two tables as they
    are (``prefix`` of :func:`~parrotsim.kernels.paged_decode.paged_decode_attention`; no
    table is built, and the prefix may end inside its last page)."""
    pages = prefix_pages.to(suffix_block_tables.dtype)
    return paged_decode_attention(q, k_cache, v_cache, suffix_block_tables, suffix_lens,
                                  sm_scale, out=out, lse=lse, prefix=(pages, prefix_len))


def shared_prefix_decode_attention(
    q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor,
    prefix_pages: torch.Tensor, prefix_len: int,
    suffix_block_tables: torch.Tensor, suffix_lens: torch.Tensor,
    sm_scale: float | None = None, mode: str = "auto", prefix_split_tokens: int | None = None,
    suffix_splits: int | None = None, num_stages: int = 2, prefix_block_n: int = 64,
    suffix_block_n: int | None = None, suffix_stages: int | None = None,
    prefix_block_m: int | None = None, suffix_warps: int | None = None, merge_warps: int = 1, out: torch.Tensor | None = None, lse: torch.Tensor | None = None,
    fast_prefix: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Decode attention for B sequences that share a prefix.

    Args:
        q: [B, Hq, D] one query token per sequence.
        k_cache, v_cache: [num_pages, 16, Hkv, D] paged KV cache (NHD).
        prefix_pages: int32 [>= ceil(prefix_len/16)] pages of the shared prefix; its tokens are
            positions ``0..prefix_len-1`` of every sequence (any length, a partial last page ok).
        prefix_len: shared prefix tokens (Python int; fixed per CUDA graph).
        suffix_block_tables: int32 [B, max_suffix_pages]; suffix token j of sequence b (position
            ``prefix_len + j``) lives at page ``suffix_block_tables[b, j // 16]``, slot ``j % 16``.
        suffix_lens: int32 [B] suffix tokens per sequence (0 allowed).
        mode: "auto" (by shape from the tuning table, see :func:`choose_shared`),
            "paged" (the paged kernel over the shared pages),
            "fused" (prefix and suffix tiles in one launch, then a merge launch),
            "separate" (prefix, suffix, merge: three launches), "concurrent" (as separate, but
            prefix and suffix on two streams, running at the same time) or "chained" (prefix launch,
            then one suffix launch that merges the prefix states in its epilogue, as in
            Parrot; the suffix is not split) or "fused_last" (opt-in: as "fused" but one launch,
            the last program to finish a (sequence, head) merges it; :mod:`.cascade_last`).
        prefix_split_tokens / suffix_splits: override the split heuristics (and the table's).
        num_stages / prefix_block_n, suffix_stages / suffix_block_n / suffix_warps: tiles
            (suffix default 128 tokens x 2 stages for "concurrent", else 64 x 3, 4 warps; the
            GPU's tuning table may name another for mode "auto");
            merge_warps: warps of the merge kernel (1 measured 4 us faster than 4 at B=64);
            prefix_block_m: rows per prefix tile (default by batch, see prefix_tiles).
        out, lse: optional output buffers ([B, Hq, D] q.dtype, [B, Hq] fp32).
        fast_prefix: (mode "fused_last" only) prefix tiles without masks on whole tiles and
            with the scale folded into the exponent (:mod:`parrotsim.kernels.prefix_tile_fast`).
    Returns:
        ``(out [B, Hq, D] q.dtype, lse [B, Hq] fp32 natural log)`` over prefix + suffix.
    """
    B, HQ, D = q.shape
    _, page, HKV, _ = k_cache.shape
    G = HQ // HKV
    scale = default_scale(D, sm_scale) * LOG2E
    if mode == "auto":
        choice = choose_shared(B, G, prefix_len, suffix_block_tables.shape[1] * page, q.device)
        mode = choice.mode
        if prefix_split_tokens is None and choice.prefix_splits:
            prefix_split_tokens = -(-max(prefix_len, 1) // choice.prefix_splits)
        prefix_block_m = prefix_block_m or choice.prefix_bm or None
        suffix_splits = suffix_splits or choice.suffix_splits or None
        if choice.suffix_tile is not None and suffix_block_n is None:
            suffix_block_n, tuned_warps, tuned_stages = choice.suffix_tile
            suffix_warps = suffix_warps or tuned_warps
            suffix_stages = suffix_stages or tuned_stages
    if mode == "paged":
        return paged_over_shared_pages(q, k_cache, v_cache, prefix_pages, prefix_len,
                                       suffix_block_tables, suffix_lens, sm_scale, out, lse)
    if mode not in ("fused", "separate", "concurrent", "chained", "fused_last"):
        raise ValueError(f"unknown mode {mode!r}")
    if fast_prefix and mode != "fused_last":
        raise ValueError(f"fast_prefix needs mode 'fused_last', not {mode!r}")
    # concurrent: the suffix programs fill the GPU too, so fewer, longer prefix splits
    conc = mode == "concurrent"
    bm, bn, warps, split_len, nsp = prefix_tiles(B, G, prefix_len, HKV, q.device,
                                                 prefix_split_tokens, block_n=prefix_block_n,
                                                 block_m=prefix_block_m, at_most_one_wave=conc)
    if suffix_block_n is None:
        suffix_block_n = 128 if conc else 64
    if suffix_warps is None:
        suffix_warps = 4
    if suffix_stages is None:
        suffix_stages = 2 if conc else 3
    nss = suffix_splits or choose_num_splits(B * HKV, suffix_block_tables.shape[1] * page,
                                             q.device)
    if mode == "chained":
        nss = 0
    out = torch.empty_like(q) if out is None else out
    lse = torch.empty(B, HQ, dtype=torch.float32, device=q.device) if lse is None else lse
    if mode == "fused_last":
        launch_cascade_last(q, k_cache, v_cache, prefix_pages, prefix_len, suffix_block_tables,
                            suffix_lens, scale, out, lse, (bm, bn, warps, split_len, nsp), nss,
                            suffix_block_n, num_stages, fast_prefix)
        return out, lse
    n_slots = nsp + nss
    po = torch.empty(B, HQ, n_slots, D, dtype=torch.float32, device=q.device)
    plse = torch.empty(B, HQ, n_slots, dtype=torch.float32, device=q.device)
    rb = -(-(B * G) // bm)
    strides = (q.stride(0), q.stride(1), *k_cache.stride()[:3], *v_cache.stride()[:3])
    if mode == "fused":
        n_pre = rb * HKV * nsp
        _cascade_kernel[(n_pre + B * HKV * nss,)](
            q, k_cache, v_cache, prefix_pages, prefix_len, suffix_block_tables, suffix_lens,
            po, plse, split_len, scale, B * G, B, HQ, HKV, n_slots, rb, n_pre,
            *strides, suffix_block_tables.stride(0), nsp, nss, G=G, BM=bm, BN=bn,
            BLOCK_H=max(16, triton.next_power_of_2(G)),
            BN_S=suffix_block_n, D=D, PAGE=page, F32=INTERPRET, num_warps=warps,
            num_stages=num_stages)
        launch_merge(po, plse, out, lse)
        return out, lse

    def prefix() -> None:
        _prefix_kernel[(rb, HKV, nsp)](
            q, k_cache, v_cache, prefix_pages, prefix_len, po, plse, split_len, scale, B * G,
            HQ, n_slots, *strides, G=G, BM=bm, BN=bn, D=D, PAGE=page, F32=INTERPRET,
            num_warps=warps, num_stages=num_stages)

    def suffix() -> None:
        launch_decode(q, k_cache, v_cache, suffix_block_tables, suffix_lens, scale / LOG2E, nss,
                      None, None, po, plse, slot0=nsp, block_n=suffix_block_n,
                      num_warps=suffix_warps, num_stages=suffix_stages)

    if mode == "chained":
        prefix()
        launch_decode(q, k_cache, v_cache, suffix_block_tables, suffix_lens, scale / LOG2E, 1,
                      out, lse, po, plse, slot0=nsp, block_n=suffix_block_n,
                      num_stages=suffix_stages, merge=True)
        return out, lse
    run_phases(prefix, suffix, q, mode == "concurrent")
    launch_merge(po, plse, out, lse, num_warps=merge_warps)
    return out, lse


__all__ = ["choose_shared", "paged_over_shared_pages", "prefix_tiles", "run_phases",
           "shared_prefix_decode_attention"]
