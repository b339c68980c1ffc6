"""Split-KV paged decode whose K/V pages are read by tensor descriptors, one page a copy.

The follow-up to :mod:`.decode_desc` (session 11): over consecutive pages, one bulk copy per
tile took the paged tile from 83-87 % to 92-98 % of the bytes floor at G = 4 (B >= 100, P >=
3000), so the page gather is what the paged kernel loses there. A real page table has no
consecutive runs to rely on, so this kernel keeps the table and replaces only the gather: each
tile of ``PAGES`` pages (``PAGES * 16`` tokens) is ``PAGES`` bulk copies of one 16-token page,
at row ``page_id * 16`` of the cache viewed as [pages * 16, Hkv * D], joined into one [BN, D]
tile for the ``tl.dot`` (:func:`.attend_desc.page_rows`); the kernel is :mod:`.decode_desc`'s
with ``PAGES`` > 0. Tile rows, online softmax, splits and the merge are those of
:mod:`parrotsim.kernels.paged_decode`. ``PAGES`` is 1, 2 or 4. Pages of 32-128 tokens (not the
project's KV semantics, which are 16) are taken too, to time a tile that is one copy of one page.

Measured on the H200 (``kernels/results/session11``): over 16-token pages one page a copy is the
best tile and takes 0.97-1.29x the shipped kernel's time (four pages joined in registers about
3x); over 64-token pages 0.81-0.99x at G 4 and 8, at >= 90 % of the bytes floor on 7 of 12
shapes. Kept for the benchmark, not used by the model.
"""

from __future__ import annotations

import torch

from parrotsim.kernels.experimental.decode_desc import launch_decode_desc

#: page sizes (tokens) the kernel takes: the project's 16 and the larger pages a tile can be
PAGE_SIZES = (16, 32, 64, 128)


def paged_decode_desc(q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor,
                      block_tables: torch.Tensor, seq_lens: torch.Tensor, max_len: int,
                      num_splits: int | None = None, pages_per_tile: int = 4,
                      num_warps: int = 4, num_stages: int = 3, sm_scale: float | None = None
                      ) -> tuple[torch.Tensor, torch.Tensor]:
    """Decode attention of one query per sequence over paged K/V (``k_cache`` [pages, page,
    Hkv, D] with pages of 16-128 tokens, ``block_tables`` int32 [B, max pages]); returns (out
    [B, Hq, D], natural-log lse [B, Hq]) as
    :func:`parrotsim.kernels.paged_decode.paged_decode_attention` does. A tile is
    ``pages_per_tile`` pages of at most 128 tokens in all."""
    page = k_cache.shape[1]
    if pages_per_tile not in (1, 2, 4):
        raise ValueError(f"pages_per_tile must be 1, 2 or 4, not {pages_per_tile}")
    if page not in PAGE_SIZES or pages_per_tile * page > 128:
        raise ValueError(f"{pages_per_tile} pages of {page} tokens a tile: pages of "
                         f"{PAGE_SIZES} tokens, at most 128 tokens a tile")
    return launch_decode_desc(q, k_cache, v_cache, block_tables, seq_lens, max_len, num_splits,
                              pages_per_tile * page, pages_per_tile, num_warps, num_stages,
                              sm_scale)


__all__ = ["paged_decode_desc"]
