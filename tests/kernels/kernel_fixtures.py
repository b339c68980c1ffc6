"""Random paged-KV fixtures shared by the kernel tests (small shapes for the interpreter)."""

from __future__ import annotations

import torch

PAGE = 16


def make_cache(num_pages: int, hkv: int, d: int, gen: torch.Generator,
               dtype: torch.dtype = torch.bfloat16) -> tuple[torch.Tensor, torch.Tensor]:
    """Random K and V caches [num_pages, 16, hkv, d]."""
    k = torch.randn(num_pages, PAGE, hkv, d, generator=gen).to(dtype)
    v = torch.randn(num_pages, PAGE, hkv, d, generator=gen).to(dtype)
    return k, v


def random_tables(lens: list[int], pool: torch.Tensor, extra_cols: int = 1) -> torch.Tensor:
    """Block tables [len(lens), width] of distinct pages taken in order from ``pool`` (a random
    permutation). Unused entries point at page 0, which holds real data, so a read past a
    sequence's length shows up as a wrong result."""
    need = [-(-n // PAGE) for n in lens]
    width = max(max(need), 1) + extra_cols
    table = torch.zeros(len(lens), width, dtype=torch.int32)
    i = 0
    for b, n in enumerate(need):
        table[b, :n] = pool[i:i + n]
        i += n
    return table


def rel_err(out: torch.Tensor, ref: torch.Tensor) -> float:
    """||out - ref|| / ||ref|| in fp32."""
    return float((out.float() - ref.float()).norm() / ref.float().norm().clamp_min(1e-12))
