"""Decode attention for a batch whose sequences fork *several* shared prefixes.

The simulator's ``shared_prefix`` kernel costs a decode batch with k forked groups as one
prefix pass per group plus one paged pass over every sequence's own tokens
(:mod:`parrotsim.sim.model.costmodel`), while :func:`~parrotsim.kernels.shared_prefix_decode.
shared_prefix_decode_attention` serves one prefix per call. This is that composition as a
kernel: each group's prefix tiles (:mod:`parrotsim.kernels.prefix_tile`) run over the group's
rows, one split-KV launch (:func:`~parrotsim.kernels.paged_decode.launch_decode`) covers the
suffixes of every row (a row in no group: its whole context), and one merge combines the
partial states by log-sum-exp. Prefix launches run one after another on the current stream
("separate" mode, per group), so k groups cost k + 2 launches plus the fill of the prefix
slots' LSEs.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from parrotsim.kernels._common import INTERPRET, LOG2E, default_scale
from parrotsim.kernels.paged_decode import choose_num_splits, launch_decode, launch_merge
from parrotsim.kernels.prefix_tile import _prefix_kernel, prefix_tiles


@dataclass(frozen=True)
class PrefixGroup:
    """Rows ``first .. first + rows - 1`` of the batch fork the prefix of ``prefix_len``
    tokens held in ``pages`` (int32, ``ceil(prefix_len / 16)`` pages or more)."""

    pages: torch.Tensor
    prefix_len: int
    first: int
    rows: int


@dataclass
class GroupedPlan:
    """The host-side choices and buffers of one several-prefix batch, made once and reused by
    every layer (as FlashInfer's plan/run split): each group's tiling, the suffix split count,
    the partial states ``po`` [B, Hq, S, D] / ``plse`` [B, Hq, S] (prefix slots that no launch
    writes - rows in no group, groups with fewer splits - hold -inf from the start) and ``lse``.
    """

    groups: list[PrefixGroup]
    tiles: list[tuple[int, int, int, int, int]]
    nsp: int
    nss: int
    po: torch.Tensor
    plse: torch.Tensor
    lse: torch.Tensor


def plan_grouped(q: torch.Tensor, k_cache: torch.Tensor, groups: list[PrefixGroup],
                 suffix_block_tables: torch.Tensor,
                 suffix_splits: int | None = None) -> GroupedPlan:
    """The :class:`GroupedPlan` of a batch shaped as ``q`` [B, Hq, D] (see
    :func:`grouped_shared_prefix_decode_attention` for the arguments)."""
    B, HQ, D = q.shape
    _, page, HKV, _ = k_cache.shape
    covered = sorted((g.first, g.first + g.rows) for g in groups)
    if any(a < 0 or b > B or a >= b for a, b in covered) or any(
            covered[i][1] > covered[i + 1][0] for i in range(len(covered) - 1)):
        raise ValueError(f"groups must be disjoint, non-empty row ranges of 0..{B - 1}: "
                         f"{covered}")
    tiles = [prefix_tiles(g.rows, HQ // HKV, g.prefix_len, HKV, q.device) for g in groups]
    nsp = max([t[4] for t in tiles], default=0)
    nss = suffix_splits or choose_num_splits(B * HKV, suffix_block_tables.shape[1] * page,
                                             q.device)
    po = torch.empty(B, HQ, nsp + nss, D, dtype=torch.float32, device=q.device)
    plse = torch.empty(B, HQ, nsp + nss, dtype=torch.float32, device=q.device)
    plse[:, :, :nsp] = float("-inf")  # rows in no group, and groups with fewer splits
    lse = torch.empty(B, HQ, dtype=torch.float32, device=q.device)
    return GroupedPlan(list(groups), tiles, nsp, nss, po, plse, lse)


def grouped_shared_prefix_decode_attention(
    q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor, groups: list[PrefixGroup],
    suffix_block_tables: torch.Tensor, suffix_lens: torch.Tensor,
    sm_scale: float | None = None, suffix_splits: int | None = None,
    out: torch.Tensor | None = None, plan: GroupedPlan | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Decode attention of B sequences, some of which fork one of ``groups``' prefixes.

    Args:
        q: [B, Hq, D] one query token per sequence; k_cache, v_cache: [pages, 16, Hkv, D].
        groups: disjoint row ranges, each forking its own prefix (no group: plain paged decode).
        suffix_block_tables: int32 [B, width]: a grouped row's tokens after its prefix (token j
            at position ``prefix_len + j``), any other row's whole context.
        suffix_lens: int32 [B] tokens in those tables (0 allowed for grouped rows).
        out: [B, Hq, D] written in place when given (else allocated).
        plan: from :func:`plan_grouped` for these groups and shapes (a model's layers share
            one; its buffers are reused, so the returned ``lse`` is the plan's), else made here.
    Returns:
        ``(out [B, Hq, D] q.dtype, lse [B, Hq] fp32 natural log)``.
    """
    B, HQ, D = q.shape
    _, page, HKV, _ = k_cache.shape
    G = HQ // HKV
    scale = default_scale(D, sm_scale) * LOG2E
    if plan is None:
        plan = plan_grouped(q, k_cache, groups, suffix_block_tables, suffix_splits)
    po, plse, n_slots = plan.po, plan.plse, plan.nsp + plan.nss
    for g, (bm, bn, warps, split_len, splits) in zip(plan.groups, plan.tiles, strict=True):
        rows = slice(g.first, g.first + g.rows)
        qg = q[rows]
        _prefix_kernel[(-(-(g.rows * G) // bm), HKV, splits)](
            qg, k_cache, v_cache, g.pages, g.prefix_len, po[rows], plse[rows], split_len, scale,
            g.rows * G, HQ, n_slots, qg.stride(0), qg.stride(1), *k_cache.stride()[:3],
            *v_cache.stride()[:3], G=G, BM=bm, BN=bn, D=D, PAGE=page, F32=INTERPRET,
            num_warps=warps, num_stages=2)
    launch_decode(q, k_cache, v_cache, suffix_block_tables, suffix_lens, scale / LOG2E,
                  plan.nss, None, None, po, plse, slot0=plan.nsp)
    out = torch.empty_like(q) if out is None else out
    launch_merge(po, plse, out, plan.lse)
    return out, plan.lse


__all__ = ["GroupedPlan", "PrefixGroup", "grouped_shared_prefix_decode_attention", "plan_grouped"]
