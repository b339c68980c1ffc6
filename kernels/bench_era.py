"""Cost curves of the 2023 kernels the Parrot artifact ran (issue 16, mechanisms 3 and 4).

* :func:`era_paged`: vLLM 0.1.4's no-split paged decode (:mod:`parrotsim.kernels.era_kernels`,
  ``num_stages=1``, and the pipelined no-split bracket ``stages=3``) beside today's split-KV
  kernel (tuned choice) on the calibration's paged grid (:data:`PAGED_GRID`, batch x context,
  private pages), per model's heads. One row per (model, batch, ctx): a decode-attention cost
  curve of one layer, microseconds.
* :func:`parrot_shared`: Parrot's 2023 shared-prefix kernel (prefix pass, prefix reduce,
  vLLM-style suffix pass with merge) beside today's shared-prefix kernel (mode "auto") and the
  paged kernel over the shared pages, on the calibration's shared grid (:data:`SHARED_GRID`,
  batch x prefix x suffix), LLaMA-7B heads.
* :func:`era_shared_pages`: vLLM 0.1.4's no-split kernel (and today's split-KV kernel) over a
  fork group's shared prefix pages against the same lengths on private pages, on the shared
  grid, per model's heads: how much the co-running programs that read the same pages save
  (the baseline with prefix sharing of Figs 15, 16 and 18 ran that kernel over shared pages).

Grids mirror ``calibrate/grids.py`` (full, not --quick; a test keeps them equal): kernels/ sits
below calibrate/ and cannot import it. Points run coarse grid first (every other value of
each axis), then the rest, until the time budget ends.
"""

from __future__ import annotations

import time
from functools import partial
from itertools import product
from pathlib import Path

import torch

from parrotsim.kernels.bench_cases import private_batch, shared_batch
from parrotsim.kernels.bench_util import CsvLog, RandomKV
from parrotsim.kernels.era_kernels import parrot2023_decode_attention, vllm014_decode_attention
from parrotsim.kernels.paged_decode import choose_config, paged_decode_attention
from parrotsim.kernels.shared_prefix_decode import choose_shared, shared_prefix_decode_attention

PAGED_GRID = ([1, 2, 4, 8, 16, 32, 64, 128, 256], [128, 512, 1024, 2048, 4096, 8192, 16384])
SHARED_GRID = ([1, 2, 4, 8, 16, 32, 64, 128, 256], [512, 1024, 2048, 4096, 8192, 16384],
               [64, 512])
MODELS = {"llama-7b": (32, 128), "llama-13b": (40, 128)}  # query heads = KV heads, head dim
ERA_FIELDS = ["model", "heads", "head_dim", "batch", "ctx", "vllm014_us",
              "nosplit_pipelined_us", "split_kv_us", "split_kv_choice", "vllm014_over_split"]
SHARED_PAGES_FIELDS = ["model", "heads", "head_dim", "batch", "prefix", "suffix",
                       "vllm014_shared_us", "vllm014_private_us", "vllm014_shared_over_private",
                       "split_shared_us", "split_private_us", "split_shared_over_private"]
PARROT_FIELDS = ["model", "heads", "head_dim", "batch", "prefix", "suffix", "parrot2023_us",
                 "shared_us", "shared_choice", "paged_shared_us", "parrot_speedup_vs_paged",
                 "shared_speedup_vs_paged"]


def coarse_first(axes: list[list[int]], keep=lambda *p: True) -> list[tuple[int, ...]]:
    """Grid points (product of ``axes``) with every axis index even first, then the rest."""
    pts = [(idx, tuple(a[i] for a, i in zip(axes, idx, strict=True)))
           for idx in product(*(range(len(a)) for a in axes))]
    pts = [(idx, p) for idx, p in pts if keep(*p)]
    return [p for idx, p in sorted(pts, key=lambda t: any(i % 2 for i in t[0]))]


def paged_points(grid=PAGED_GRID, max_tokens: int = 1 << 20) -> list[tuple[int, int]]:
    """(batch, ctx) of the calibration's paged grid (batch x ctx <= 2^20), coarse first."""
    return coarse_first(list(grid), lambda b, c: b * c <= max_tokens)


def era_paged(out: Path, timer, dev: torch.device, budget_s: float, reps: int = 10,
              models: dict = MODELS, grid=PAGED_GRID) -> dict:
    """vLLM 0.1.4 no-split vs today's split-KV paged decode per model over the paged grid."""
    t0, log, kv, done = time.time(), CsvLog(out, ERA_FIELDS), RandomKV(dev), 0
    todo = [(m, pt) for m in models for pt in paged_points(grid)]
    for model, (b, ctx) in todo:
        if time.time() - t0 > budget_s:
            print(f"era_paged: budget {budget_s:.0f}s reached after {done} points", flush=True)
            break
        hq, d = models[model]
        pb = private_batch(kv, [ctx] * b, hq, 1, d)
        args = (pb.q, pb.k, pb.v, pb.tables, pb.lens)
        cfg = choose_config(b, hq, 1, pb.tables.shape[1] * 16, dev)
        era = timer(partial(vllm014_decode_attention, *args), reps=reps)
        split = timer(partial(paged_decode_attention, *args), reps=reps)
        log.add(model=model, heads=hq, head_dim=d, batch=b, ctx=ctx, vllm014_us=era,
                nosplit_pipelined_us=timer(partial(vllm014_decode_attention, *args, stages=3),
                                           reps=reps),
                split_kv_us=split, split_kv_choice=f"{cfg.splits}s/{cfg.block_n}x{cfg.warps}"
                f"w{cfg.stages}", vllm014_over_split=era / split)
        done += 1
    return {"points": done, "planned": len(todo)}


def parrot_shared(out: Path, timer, dev: torch.device, budget_s: float, reps: int = 10,
                  model: str = "llama-7b", heads: tuple[int, int] | None = None,
                  grid=SHARED_GRID) -> dict:
    """Parrot 2023 vs today's shared-prefix kernel vs paged over shared pages (one model)."""
    hq, d = heads or MODELS[model]
    t0, log, kv, done = time.time(), CsvLog(out, PARROT_FIELDS), RandomKV(dev), 0
    todo = coarse_first(list(grid))
    for b, p, s in todo:
        if time.time() - t0 > budget_s:
            print(f"parrot_shared: budget {budget_s:.0f}s reached after {done} points",
                  flush=True)
            break
        sb = shared_batch(kv, p, [s] * b, hq, 1, d)
        parrot = timer(partial(parrot2023_decode_attention, *sb.args()), reps=reps)
        ours = timer(partial(shared_prefix_decode_attention, *sb.args()), reps=reps)
        paged = timer(partial(paged_decode_attention, sb.q, sb.k, sb.v, *sb.paged_tables()),
                      reps=reps)
        ch = choose_shared(b, 1, p, sb.suffix_tables.shape[1] * 16, dev)
        log.add(model=model, heads=hq, head_dim=d, batch=b, prefix=p, suffix=s,
                parrot2023_us=parrot, shared_us=ours, shared_choice=ch.mode,
                paged_shared_us=paged, parrot_speedup_vs_paged=paged / parrot,
                shared_speedup_vs_paged=paged / ours)
        done += 1
    return {"points": done, "planned": len(todo)}


def era_shared_pages(out: Path, timer, dev: torch.device, budget_s: float, reps: int = 10,
                     models: dict = MODELS, grid=SHARED_GRID, max_tokens: int = 1 << 20) -> dict:
    """No-split and split-KV paged decode over shared prefix pages vs private pages of the same
    lengths (one layer, microseconds), per model, over the shared grid (batch x (prefix + suffix)
    <= ``max_tokens``, the paged grid's limit), coarse points first."""
    t0, log, kv, done = time.time(), CsvLog(out, SHARED_PAGES_FIELDS), RandomKV(dev), 0
    todo = [(m, pt) for pt in coarse_first(list(grid), lambda b, p, s: b * (p + s) <= max_tokens)
            for m in models]
    for model, (b, p, s) in todo:
        if time.time() - t0 > budget_s:
            print(f"era_shared_pages: budget {budget_s:.0f}s reached after {done} points",
                  flush=True)
            break
        hq, d = models[model]
        sb = shared_batch(kv, p, [s] * b, hq, 1, d)
        shared = (sb.q, sb.k, sb.v, *sb.paged_tables())
        pb = private_batch(kv, [p + s] * b, hq, 1, d)
        private = (pb.q, pb.k, pb.v, pb.tables, pb.lens)
        era_sh = timer(partial(vllm014_decode_attention, *shared), reps=reps)
        era_pr = timer(partial(vllm014_decode_attention, *private), reps=reps)
        split_sh = timer(partial(paged_decode_attention, *shared), reps=reps)
        split_pr = timer(partial(paged_decode_attention, *private), reps=reps)
        log.add(model=model, heads=hq, head_dim=d, batch=b, prefix=p, suffix=s,
                vllm014_shared_us=era_sh, vllm014_private_us=era_pr,
                vllm014_shared_over_private=era_sh / era_pr, split_shared_us=split_sh,
                split_private_us=split_pr, split_shared_over_private=split_sh / split_pr)
        done += 1
    return {"points": done, "planned": len(todo)}
