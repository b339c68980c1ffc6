"""Session-4 section of :mod:`parrotsim.kernels.bench` (``--sections decode_step``): one-token decode
step variants of LLaMA-7B (and a few of 13B), B=1, context 512, CUDA graph, L2 flushed before
each replay, median of ``REPS`` replays; logits compared with the cuBLAS path.

Variants (attributes of :class:`parrotsim.kernels.experimental.llama_variants.LlamaVariants`,
i.e. :class:`parrotsim.kernels.llama.LlamaModel` plus the slower options, on top of the session-3 default
"old default" = PDL GEMVs, rope kernel, 6 KV splits, 4-warp merge kernel; "default" = the
current one: fused RoPE, 2-warp merge, the >= 72-token split rule): ``fuse_rope`` (qkv
GEMV with the RoPE + cache-write epilogue), ``gemv_prefetch`` (per GEMV: its resident programs prefetch
the rest of their rows, and optionally later programs' rows, into L2 before
``griddepcontrol.wait``), ``merge_warps``, ``decode_splits``, ``o_tiles``. "fused" was the
default after session 4's first run. The old default, "fused" and "default" are timed twice
(run-to-run spread).
"""

from __future__ import annotations

import gc

import torch

from parrotsim.kernels.bench_llama import _weight_bytes
from parrotsim.kernels.experimental.llama_variants import LlamaVariants
from parrotsim.kernels.llama import DecodeGraph, LlamaConfig
from parrotsim.kernels.llama_batch import SeqChunk, build_batch

REPS = 50
BASE = dict(gemv_single=True, pdl=True, fuse_rope=False, gemv_prefetch={}, merge_warps=4,
            o_tiles=None, decode_splits=6)  # the session-3 default (its split rule: 6 here)
DEFAULT = dict(fuse_rope=True, merge_warps=2, decode_splits=None)  # LlamaModel's, session 4
F = dict(fuse_rope=True)
VARIANTS_7B = [
    ("cublas", dict(gemv_single=False, pdl=False)),
    ("old default", {}),
    ("fused", F),
    ("fused + o pf1", dict(F, gemv_prefetch={"o": 1})),
    ("fused + o pf660", dict(F, gemv_prefetch={"o": 660})),
    ("fused + o,gu pf1", dict(F, gemv_prefetch={"o": 1, "gate_up": 1})),
    ("fused + o,gu,down pf1", dict(F, gemv_prefetch={"o": 1, "gate_up": 1, "down": 1})),
    ("fused + merge 1w", dict(F, merge_warps=1)),
    ("fused + merge 2w", dict(F, merge_warps=2)),
    ("fused + splits 4", dict(F, decode_splits=4)),
    ("fused + splits 8", dict(F, decode_splits=8)),
    ("fused + o pf1 + merge 1w", dict(F, gemv_prefetch={"o": 1}, merge_warps=1)),
    ("fused + o,gu pf1 + merge 1w", dict(F, gemv_prefetch={"o": 1, "gate_up": 1},
                                         merge_warps=1)),
    ("fused + o(2,512,2048,2,3) pf1", dict(F, gemv_prefetch={"o": 1},
                                           o_tiles=(2, 512, 2048, 2, 3))),
    ("fused + merge 2w + splits 8", dict(F, merge_warps=2, decode_splits=8)),
    ("fused + merge 1w + splits 8", dict(F, merge_warps=1, decode_splits=8)),
    ("fused + merge 2w + splits 7", dict(F, merge_warps=2, decode_splits=7)),
    ("fused + merge 2w (again)", dict(F, merge_warps=2)),
    ("default", DEFAULT),
    ("old default (again)", {}),
    ("fused (again)", F),
    ("fused + merge 2w + splits 8 (again)", dict(F, merge_warps=2, decode_splits=8)),
    ("default (again)", DEFAULT),
]
VARIANTS_13B = ["cublas", "old default", "fused", "fused + merge 2w",
                "fused + merge 2w + splits 8", "fused + merge 1w + splits 8", "default",
                "fused (again)", "default (again)"]


def _time_variants(tables, timer, model: LlamaVariants, name: str, labels: list[str],
                   floor_ms: float) -> None:
    batch = build_batch([], [SeqChunk([7], 512, list(range(33)))], model.device)
    ref = None
    saved = {k: getattr(model, k) for k in BASE}
    for label, attrs in VARIANTS_7B:
        if label not in labels:
            continue
        for k, v in {**BASE, **attrs}.items():
            setattr(model, k, v)
        try:
            g = DecodeGraph(model, batch)
            us = timer(g.run, graph=False, reps=REPS)
            logits = g.run().clone()
        except Exception as e:  # keep the other variants
            tables.add("decode_step", model=name, variant=label, error=str(e)[:200])
            continue
        ref = logits if ref is None else ref
        tables.add("decode_step", model=name, variant=label, ms=us / 1e3, floor_ms=floor_ms,
                   ratio=us / 1e3 / floor_ms,
                   logits_rel_vs_cublas=float((logits - ref).norm() / ref.norm()),
                   finite=bool(torch.isfinite(logits).all()))
        del g
    for k, v in saved.items():
        setattr(model, k, v)


def run(tables, timer, ceil: dict[str, float], dev: torch.device) -> None:
    """7B variants, then the 13B subset."""
    bw = ceil["stream_read_TBs"]
    for name, labels, pages in (("llama-7b", [v[0] for v in VARIANTS_7B], 2048),
                                ("llama-13b", VARIANTS_13B, 64)):
        m = LlamaVariants(LlamaConfig.preset(name), num_pages=pages, device=dev)
        m.k_cache.normal_()
        m.v_cache.normal_()
        _time_variants(tables, timer, m, name, labels, _weight_bytes(m) / bw / 1e9)
        del m
        gc.collect()
        torch.cuda.empty_cache()
