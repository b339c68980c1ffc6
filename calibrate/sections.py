"""Kernel-level calibration sections (GPU only): one layer's attention kernels.

Each section yields rows ``{**point, status, us_median, us_p20, us_p80, reps}`` for one grid of
:mod:`parrotsim.calibrate.grids`. KV caches hold random data (never zeros) and every sequence has its own
pages unless a prefix is meant to be shared.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator

import torch

from parrotsim.calibrate.grids import paged_grid, prefill_grid, shared_grid
from parrotsim.calibrate.timing import Progress, StatTimer, measure_point
from parrotsim.kernels.llama import LlamaConfig
from parrotsim.kernels.llama_batch import PAGE_SIZE
from parrotsim.kernels.paged_decode import paged_decode_attention
from parrotsim.kernels.prefill import prefill_attention
from parrotsim.kernels.shared_prefix_decode import shared_prefix_decode_attention


def _pages(tokens: int) -> int:
    return -(-tokens // PAGE_SIZE)


def _cache(cfg: LlamaConfig, tokens: int, dev: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    shape = (_pages(tokens) + 1, PAGE_SIZE, cfg.num_kv_heads, cfg.head_dim)
    k = torch.empty(shape, dtype=torch.bfloat16, device=dev).normal_()
    v = torch.empty(shape, dtype=torch.bfloat16, device=dev).normal_()
    return k, v


def _free() -> None:
    gc.collect()
    torch.cuda.empty_cache()


def _run(points: list[dict], section: str, timer: StatTimer, make, describe) -> Iterator[dict]:
    bar = Progress(len(points), section)
    for p in points:
        row = {"section": section, **p, **measure_point(timer, lambda p=p: make(p))}
        bar.step(describe(p), f"{row['us_median']:.1f} us" if row["status"] == "ok"
                 else row["status"])
        yield row


def paged(cfg: LlamaConfig, timer: StatTimer, dev: torch.device, quick: bool) -> Iterator[dict]:
    """Paged decode attention, one layer, B sequences of L tokens each (private pages)."""
    pts = paged_grid(quick)
    kv = list(_cache(cfg, max(p["batch"] * (p["ctx"] + PAGE_SIZE) for p in pts), dev))

    def make(p: dict):
        b, n = p["batch"], p["ctx"]
        npp = _pages(n)
        q = torch.randn(b, cfg.num_heads, cfg.head_dim, dtype=torch.bfloat16, device=dev)
        bt = torch.arange(b * npp, dtype=torch.int32, device=dev).view(b, npp)
        lens = torch.full((b,), n, dtype=torch.int32, device=dev)
        out = torch.empty_like(q)
        lse = torch.empty(b, cfg.num_heads, dtype=torch.float32, device=dev)
        return lambda: paged_decode_attention(q, *kv, bt, lens, out=out, lse=lse)

    yield from _run(pts, "paged", timer, make, lambda p: f"B={p['batch']} L={p['ctx']}")
    kv.clear()
    _free()


def shared(cfg: LlamaConfig, timer: StatTimer, dev: torch.device, quick: bool) -> Iterator[dict]:
    """Shared-prefix decode attention, one layer: B sequences share P prefix tokens, each has S
    suffix tokens of its own."""
    pts = shared_grid(quick)
    kv = list(_cache(cfg, max(p["prefix"] + p["batch"] * (p["suffix"] + PAGE_SIZE)
                              for p in pts), dev))

    def make(p: dict):
        b, pre, suf = p["batch"], p["prefix"], p["suffix"]
        npre, nsuf = _pages(pre), _pages(suf)
        q = torch.randn(b, cfg.num_heads, cfg.head_dim, dtype=torch.bfloat16, device=dev)
        prefix_pages = torch.arange(npre, dtype=torch.int32, device=dev)
        sbt = (npre + torch.arange(b * nsuf, dtype=torch.int32, device=dev)).view(b, nsuf)
        slens = torch.full((b,), suf, dtype=torch.int32, device=dev)
        out = torch.empty_like(q)
        lse = torch.empty(b, cfg.num_heads, dtype=torch.float32, device=dev)
        return lambda: shared_prefix_decode_attention(q, *kv, prefix_pages, pre, sbt, slens,
                                                      out=out, lse=lse)

    yield from _run(pts, "shared", timer, make,
                    lambda p: f"B={p['batch']} P={p['prefix']} S={p['suffix']}")
    kv.clear()
    _free()


def paged_shared(cfg: LlamaConfig, timer: StatTimer, dev: torch.device, quick: bool
                 ) -> Iterator[dict]:
    """The paged kernel over shared prefix pages, one layer, on the shared grid: B block tables
    whose first pages are the same P prefix tokens' pages (a partial last prefix page private to
    each sequence, as a block-granular prefix cache keeps it), then S suffix tokens each. The
    group's programs read the same pages at about the same time, so this measures the L2 reuse
    that private contexts do not get (``paged_shared_prefix`` in the profile)."""
    pts = shared_grid(quick)
    kv = list(_cache(cfg, max(p["prefix"] + p["batch"] * (p["prefix"] % PAGE_SIZE + p["suffix"]
                                                          + PAGE_SIZE) for p in pts), dev))

    def make(p: dict):
        b, pre, suf = p["batch"], p["prefix"], p["suffix"]
        whole, npre = pre // PAGE_SIZE, _pages(pre)
        nown = _pages(pre % PAGE_SIZE + suf)
        q = torch.randn(b, cfg.num_heads, cfg.head_dim, dtype=torch.bfloat16, device=dev)
        shared_pages = torch.arange(whole, dtype=torch.int32, device=dev).expand(b, whole)
        own = (npre + torch.arange(b * nown, dtype=torch.int32, device=dev)).view(b, nown)
        tables = torch.cat([shared_pages, own], dim=1).contiguous()
        lens = torch.full((b,), pre + suf, dtype=torch.int32, device=dev)
        out = torch.empty_like(q)
        lse = torch.empty(b, cfg.num_heads, dtype=torch.float32, device=dev)
        return lambda: paged_decode_attention(q, *kv, tables, lens, out=out, lse=lse)

    yield from _run(pts, "paged_shared", timer, make,
                    lambda p: f"B={p['batch']} P={p['prefix']} S={p['suffix']}")
    kv.clear()
    _free()


def prefill(cfg: LlamaConfig, timer: StatTimer, dev: torch.device, quick: bool
            ) -> Iterator[dict]:
    """Prefill attention (Triton, paged), one layer: ``chunks`` chunks of ``new`` tokens, each
    over ``ctx`` cached tokens."""
    pts = prefill_grid(quick)
    kv = list(_cache(cfg, max(p["chunks"] * (p["new"] + p["ctx"] + PAGE_SIZE)
                              for p in pts), dev))

    def make(p: dict):
        n, ctx, c = p["new"], p["ctx"], p["chunks"]
        npp = _pages(n + ctx)
        q = torch.randn(n * c, cfg.num_heads, cfg.head_dim, dtype=torch.bfloat16, device=dev)
        bt = torch.arange(c * npp, dtype=torch.int32, device=dev).view(c, npp)
        cu = torch.arange(c + 1, dtype=torch.int32, device=dev) * n
        ctx_lens = torch.full((c,), ctx, dtype=torch.int32, device=dev)
        out = torch.empty_like(q)
        return lambda: prefill_attention(q, *kv, bt, cu, ctx_lens, n, out=out)

    yield from _run(pts, "prefill", timer, make,
                    lambda p: f"{p['chunks']}x new={p['new']} ctx={p['ctx']}")
    kv.clear()
    _free()
