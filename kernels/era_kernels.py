"""The 2023 decode kernels the Parrot artifact ran, composed from this package's kernels.

* :func:`vllm014_decode_attention` - vLLM 0.1.4's paged attention had no KV split: one thread
  block of 4 warps per (sequence, head) walks the whole context, a warp per 16-token page, i.e.
  64 tokens a step, without software pipelining (no cp.async). Proxy: the paged kernel with one
  split, 64-token steps, 4 warps and ``num_stages=1`` (``stages=3`` gives the pipelined
  no-split bracket). One program per (sequence, KV head): for G=1 (LLaMA-7B/13B, the paper's
  models) that is one per (sequence, head) as in vLLM.
* :func:`parrot2023_decode_attention` - Parrot's shared-prefix kernel (ParrotServe commit
  e8541c4, ``flash_paged_attention`` in ``kernels/shared_flash_decoding.py``, used by
  ``xFormersFill_SharedPromptsGenerate`` in ``attn_func.py``; one prefix per batch,
  ``jobs[0].context.parent_context``). Three launches: (1) a Triton prefix pass, all queries of
  the batch as the rows of each tile against the shared prefix, the prefix cut into splits of
  16 pages (256 tokens), tile by batch (rows <= 16: 16 x 32, 6 stages; <= 32: 32 x 32, 6
  stages; <= 64: 64 x 64, 4 stages; else 128 x 64, 4 stages; 4 warps); (2) a log-sum-exp
  reduce of the prefix splits (skipped when there is one split, as in the artifact); (3) the
  vLLM-style no-split paged pass over each sequence's own suffix that merges the prefix state
  in its epilogue (``single_query_cached_kv_post_attention``). Here (1) is this package's
  prefix tile (rows = sequences x query heads of one KV head, so for G > 1 a KV tile is read
  once per group, where the artifact ran one program per query head), (2) the merge kernel with
  a log2 output, (3) the paged decode tile in its MERGE mode with the vLLM 0.1.4 tile above.
"""

from __future__ import annotations

import torch
import triton

from parrotsim.kernels._common import INTERPRET, LOG2E, default_scale
from parrotsim.kernels.paged_decode import launch_decode, launch_merge, paged_decode_attention
from parrotsim.kernels.shared_prefix_decode import _prefix_kernel

VLLM014_TILE = (64, 4, 1)  # tokens per step (4 warps x one 16-token page), warps, stages
PARROT_SPLIT_TOKENS = 256  # NUM_BLOCKS_PER_SPLIT = 16 pages of 16 tokens


def vllm014_decode_attention(q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor,
                             block_tables: torch.Tensor, seq_lens: torch.Tensor,
                             sm_scale: float | None = None, stages: int = VLLM014_TILE[2],
                             out: torch.Tensor | None = None, lse: torch.Tensor | None = None,
                             ) -> tuple[torch.Tensor, torch.Tensor]:
    """Paged decode without KV split (vLLM 0.1.4's structure); arguments as
    :func:`parrotsim.kernels.paged_decode.paged_decode_attention`."""
    bn, warps, _ = VLLM014_TILE
    return paged_decode_attention(q, k_cache, v_cache, block_tables, seq_lens, sm_scale,
                                  num_splits=1, block_n=bn, num_warps=warps, num_stages=stages,
                                  out=out, lse=lse)


def parrot_prefix_tile(rows: int) -> tuple[int, int, int, int]:
    """The artifact's prefix tile by rows (its num_seqs): ``(BM, BN, warps, stages)``."""
    if rows <= 16:
        return 16, 32, 4, 6
    if rows <= 32:
        return 32, 32, 4, 6
    if rows <= 64:
        return 64, 64, 4, 4
    return 128, 64, 4, 4


def parrot2023_decode_attention(
    q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor,
    prefix_pages: torch.Tensor, prefix_len: int,
    suffix_block_tables: torch.Tensor, suffix_lens: torch.Tensor,
    sm_scale: float | None = None, out: torch.Tensor | None = None,
    lse: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Shared-prefix decode as Parrot's 2023 kernel ran it (prefix pass, prefix reduce, suffix
    pass with merge); arguments and result as
    :func:`parrotsim.kernels.shared_prefix_decode.shared_prefix_decode_attention`."""
    B, HQ, D = q.shape
    _, page, HKV, _ = k_cache.shape
    G = HQ // HKV
    scale = default_scale(D, sm_scale)
    bm, bn, warps, stages = parrot_prefix_tile(B * G)
    nsp = max(1, -(-prefix_len // PARROT_SPLIT_TOKENS))
    dev = q.device
    po = torch.empty(B, HQ, nsp, D, dtype=torch.float32, device=dev)
    plse = torch.empty(B, HQ, nsp, dtype=torch.float32, device=dev)
    _prefix_kernel[(triton.cdiv(B * G, bm), HKV, nsp)](
        q, k_cache, v_cache, prefix_pages, prefix_len, po, plse, PARROT_SPLIT_TOKENS,
        scale * LOG2E, B * G, HQ, nsp, q.stride(0), q.stride(1), *k_cache.stride()[:3],
        *v_cache.stride()[:3], G=G, BM=bm, BN=bn, D=D, PAGE=page, F32=INTERPRET,
        num_warps=warps, num_stages=stages)
    if nsp > 1:  # reduce the prefix splits to one partial state (fp32 o, log2 lse)
        state = torch.empty(B, HQ, 1, D, dtype=torch.float32, device=dev)
        state_lse = torch.empty(B, HQ, 1, dtype=torch.float32, device=dev)
        launch_merge(po, plse, state, state_lse, lse2=True)
        po, plse = state, state_lse
    out = torch.empty_like(q) if out is None else out
    lse = torch.empty(B, HQ, dtype=torch.float32, device=dev) if lse is None else lse
    bn_s, warps_s, stages_s = VLLM014_TILE
    launch_decode(q, k_cache, v_cache, suffix_block_tables, suffix_lens, scale, 1, out, lse,
                  po, plse, slot0=1, block_n=bn_s, num_warps=warps_s, num_stages=stages_s,
                  merge=True)
    return out, lse


__all__ = ["parrot2023_decode_attention", "parrot_prefix_tile", "vllm014_decode_attention"]
