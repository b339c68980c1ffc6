"""Whole-model calibration sections (GPU only): the linear part vs tokens, whole forward passes
on mixed batches (validation data), and the fixed per-iteration pieces.

The model is :class:`parrotsim.kernels.llama.LlamaModel` with random bf16 weights, cuBLAS linear layers,
the Triton prefill kernel for every prompt chunk (one kernel, so one prefill-attention curve),
and the paged or shared-prefix decode kernel. Every forward pass is captured in a CUDA graph.
"""

from __future__ import annotations

from collections.abc import Iterator

import torch

from parrotsim.calibrate.grids import describe_forward, forward_grid, linear_grid, parse_prefills
from parrotsim.calibrate.sections import _run
from parrotsim.calibrate.timing import Progress, StatTimer, measure_point
from parrotsim.kernels.llama import LlamaModel
from parrotsim.kernels.llama_batch import PAGE_SIZE, SeqChunk, build_batch


def linear(model: LlamaModel, timer: StatTimer, quick: bool, grid: list[dict] | None = None
           ) -> Iterator[dict]:
    """All layers without rope, KV cache and attention on T tokens (no embedding, no head), at
    the calibration's token counts or at ``grid`` (``[{"tokens": T}, ...]``)."""
    cfg, dev = model.cfg, model.device

    def make(p: dict):
        h0 = torch.randn(p["tokens"], cfg.hidden, dtype=model.dtype, device=dev)

        @torch.inference_mode()
        def fn():
            h = h0
            for i in range(cfg.num_layers):
                h = model.layer(i, h, None)
            return h
        return fn

    yield from _run(grid or linear_grid(quick), "linear", timer, make, lambda p: f"T={p['tokens']}")


def _forward_batch(model: LlamaModel, p: dict):
    """The :class:`ForwardBatch` of a forward grid point (pages assigned from 0 each time)."""
    cfg = model.cfg
    gen = torch.Generator().manual_seed(0)
    nxt = [0]

    def pages(tokens: int) -> list[int]:
        n = -(-tokens // PAGE_SIZE)
        nxt[0] += n
        return list(range(nxt[0] - n, nxt[0]))

    def ids(n: int) -> list[int]:
        return torch.randint(0, cfg.vocab_size, (n,), generator=gen).tolist()

    prefills = [SeqChunk(ids(n), ctx, pages(n + ctx)) for n, ctx in parse_prefills(p["prefills"])]
    pre = p["prefix"]
    shared = pages(pre) if pre else []
    decodes = [SeqChunk(ids(1), p["decode_ctx"], shared + pages(p["decode_ctx"] + 1 - pre))
               for _ in range(p["decodes"])]
    if nxt[0] > model.k_cache.shape[1]:
        raise torch.cuda.OutOfMemoryError(f"needs {nxt[0]} pages")
    model.decode_attention = "shared_prefix" if pre else "paged"
    return build_batch(prefills, decodes, model.device, num_shared_pages=pre // PAGE_SIZE)


def forward(model: LlamaModel, timer: StatTimer, quick: bool) -> Iterator[dict]:
    """Whole forward passes (embedding, all layers, final norm, LM head per sequence)."""
    capacity = model.k_cache.shape[1] * PAGE_SIZE - 64 * PAGE_SIZE
    pts = forward_grid(quick, capacity)

    def make(p: dict):
        batch = _forward_batch(model, p)
        return lambda: model.forward(batch)

    yield from _run(pts, "forward", timer, make, describe_forward)
    model.decode_attention = "paged"


def overhead(model: LlamaModel, timer: StatTimer) -> Iterator[dict]:
    """Fixed pieces of an iteration: replaying a one-kernel graph, and embedding + final norm +
    LM head for one token (the fitter takes the overhead from the forward passes; these are
    recorded for reference)."""
    dev, cfg = model.device, model.cfg
    x = torch.zeros(1, device=dev)
    ids = torch.randint(0, cfg.vocab_size, (1,), device=dev)
    cases = {"graph_launch": lambda: x.add_(1.0),
             "embed_norm_lm_head": torch.inference_mode()(
                 lambda: model.logits(model.embed[ids]))}
    bar = Progress(len(cases), "overhead")
    for name, fn in cases.items():
        row = {"section": "overhead", "case": name, **measure_point(timer, lambda fn=fn: fn)}
        bar.step(name, f"{row.get('us_median', float('nan')):.1f} us")
        yield row
