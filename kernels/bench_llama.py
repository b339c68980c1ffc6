"""LLaMA sections of :mod:`parrotsim.kernels.bench`: weight GEMMs, decode step (CUDA graph), prefill,
linear part alone, batch-64 shared-prefix decode end to end, and LLaMA-13B decode.

Floors: decode = bytes of all weights read once (every layer's matrices and norms, final norm,
LM head) / measured streaming-read bandwidth; prefill = FLOPs (2 x matrix params x tokens,
causal attention 4 x T(T+1)/2 x D x Hq per layer, LM head for the last token) / measured
8192^3 bf16 GEMM rate.
"""

from __future__ import annotations

import gc
from functools import partial

import torch

from parrotsim.kernels.experimental.llama_variants import LlamaVariants
from parrotsim.kernels.experimental.skinny import skinny_linear
from parrotsim.kernels.llama import DecodeGraph, LlamaConfig, LlamaModel
from parrotsim.kernels.llama_batch import PAGE_SIZE, SeqChunk, build_batch

# (label, skinny_max_tokens, gemv_single, pdl, attention KV splits, fuse_rope); the first is
# the reference for the logits check (the session-3 default is timed in ``decode_step``)
DECODE_VARIANTS = [("cublas", 0, False, False, None, True),
                   ("skinny", 1, False, False, None, True),
                   ("gemv", 0, True, False, None, True),
                   ("gemv+pdl (default)", 0, True, True, None, True),
                   ("gemv+pdl rope kernel", 0, True, True, None, False),
                   ("gemv+pdl splits=3", 0, True, True, 3, True),
                   ("gemv+pdl splits=8", 0, True, True, 8, True)]
DECODE_DEFAULT = (True, True, True)  # LlamaModel's (gemv_single, pdl, fuse_rope) defaults


def _weight_bytes(m: LlamaModel) -> int:
    per = sum(t.numel() for t in m.layers[0].values()) * len(m.layers)
    return 2 * (per + m.lm_head.numel() + m.norm.numel() + m.cfg.hidden)


def _prefill_flops(cfg: LlamaConfig, t: int) -> float:
    hq, hkv, d, h = cfg.num_heads, cfg.num_kv_heads, cfg.head_dim, cfg.hidden
    mat = h * (hq + 2 * hkv) * d + hq * d * h + 3 * h * cfg.intermediate
    attn = 4 * t * (t + 1) / 2 * d * hq
    return cfg.num_layers * (2 * t * mat + attn) + 2 * h * cfg.vocab_size


def gemms(tables, timer, model: LlamaModel, bw: float, rate: float) -> None:
    """Each weight matrix at M=1 (skinny kernel vs cuBLAS) and M=4096 (cuBLAS)."""
    dev = model.device
    w = model.layers[0]
    for name, mat in [("qkv", w["w_qkv"]), ("o", w["w_o"]), ("gate_up", w["w_gate_up"]),
                      ("down", w["w_down"]), ("lm_head", model.lm_head)]:
        n, k = mat.shape
        x = torch.randn(1, k, dtype=mat.dtype, device=dev)
        byts = mat.numel() * 2
        cb = timer(partial(torch.matmul, x, mat.t()))
        tables.add("gemm", matrix=name, M=1, impl="cublas", us=cb, TBs=byts / cb / 1e6,
                   pct_stream=100 * byts / cb / 1e6 / bw)
        for bk, st, wp in [(256, 4, 4), (512, 3, 4), (128, 6, 4), (256, 4, 8)]:
            us = timer(partial(skinny_linear, x, mat, block_k=bk, num_stages=st, num_warps=wp))
            tables.add("gemm", matrix=name, M=1, impl=f"skinny k{bk} s{st} w{wp}", us=us,
                       TBs=byts / us / 1e6, pct_stream=100 * byts / us / 1e6 / bw)
        xb = torch.randn(4096, k, dtype=mat.dtype, device=dev)
        us = timer(partial(torch.matmul, xb, mat.t()))
        tables.add("gemm", matrix=name, M=4096, impl="cublas", us=us,
                   TFLOPs=2 * 4096 * n * k / us / 1e6,
                   pct_gemm_rate=100 * 2 * 4096 * n * k / us / 1e6 / rate)


def decode_prefill(tables, timer, model: LlamaVariants, bw: float, rate: float, name: str,
                   prefill_tokens: int = 4096) -> None:
    """Decode step B=1 ctx 512 (graph: cuBLAS, skinny, PDL-GEMV linears with and without the
    fused RoPE epilogue; eager), prefill 4096."""
    dev, cfg = model.device, model.cfg
    floor = _weight_bytes(model) / bw / 1e9
    batch = build_batch([], [SeqChunk([7], 512, list(range(33)))], dev)
    ref = None
    for linear, skinny, single, pdl, splits, fuse in DECODE_VARIANTS:
        model.skinny_max_tokens, model.gemv_single, model.pdl = skinny, single, pdl
        model.decode_splits, model.fuse_rope = splits, fuse
        try:
            g = DecodeGraph(model, batch)
            us = timer(g.run, graph=False, reps=30)
            logits = g.run().clone()
        except Exception as e:  # keep the other variants
            tables.add("llama", model=name, case="decode B=1 ctx=512 graph", linear=linear,
                       error=str(e)[:200])
            continue
        ref = logits if ref is None else ref
        tables.add("llama", model=name, case="decode B=1 ctx=512 graph", linear=linear,
                   ms=us / 1e3, floor_ms=floor, ratio=us / 1e3 / floor,
                   logits_rel_vs_cublas=float((logits - ref).norm() / ref.norm()))
        del g
        if linear == "skinny":
            us = timer(partial(model.forward, batch), graph=False, reps=10)
            tables.add("llama", model=name, case="decode B=1 ctx=512 eager", linear="skinny",
                       ms=us / 1e3, floor_ms=floor, ratio=us / 1e3 / floor)
    model.gemv_single, model.pdl, model.fuse_rope = DECODE_DEFAULT
    model.decode_splits = None
    model.skinny_max_tokens = 0
    t = prefill_tokens
    if not t:
        return
    toks = torch.randint(0, cfg.vocab_size, (t,)).tolist()
    pb = build_batch([SeqChunk(toks, 0, list(range(t // PAGE_SIZE)))], [], dev)
    pfloor = _prefill_flops(cfg, t) / rate / 1e9
    for backend in ("sdpa", "triton"):
        model.prefill_backend = backend
        us = timer(partial(model.forward, pb), graph=False, reps=5)
        tables.add("llama", model=name, case=f"prefill T={t}", linear=f"cublas/{backend}",
                   ms=us / 1e3, floor_ms=pfloor, ratio=us / 1e3 / pfloor)
    model.prefill_backend = "sdpa"
    for tok in (t, 1):
        us = timer(partial(model.forward_linear_only, tok), graph=False, reps=5)
        tables.add("llama", model=name, case=f"linear only T={tok}", linear="auto",
                   ms=us / 1e3, floor_ms=float("nan"), ratio=float("nan"))


def shared_decode_e2e(tables, timer, model: LlamaModel, name: str, b: int = 64,
                      p: int = 6000, s: int = 256) -> None:
    """Decode step of B sequences sharing a P-token prefix (each with S own tokens): paged
    attention over shared pages vs shared-prefix attention, whole model, CUDA graph."""
    n_pre = p // PAGE_SIZE
    n_own = -(-s // PAGE_SIZE) + 1
    decodes = [SeqChunk([3], p + s - 1, list(range(n_pre)) +
                        list(range(n_pre + i * n_own, n_pre + (i + 1) * n_own)))
               for i in range(b)]
    batch = build_batch([], decodes, model.device, num_shared_pages=n_pre)
    for mode in ("paged", "shared_prefix"):
        model.decode_attention = mode
        g = DecodeGraph(model, batch)
        us = timer(g.run, graph=False, reps=20)
        tables.add("llama", model=name, case=f"decode B={b} P={p} S={s} graph",
                   linear=f"cublas/{mode}", ms=us / 1e3, floor_ms=float("nan"),
                   ratio=float("nan"))
        del g
    model.decode_attention = "paged"


def run(tables, timer, ceil: dict[str, float], dev: torch.device) -> None:
    """All LLaMA sections (7B, then 13B decode)."""
    bw, rate = ceil["stream_read_TBs"], ceil["gemm_bf16_8192_TFLOPs"]
    m = LlamaVariants(LlamaConfig.preset("llama-7b"), num_pages=2048, device=dev)
    m.k_cache.normal_()
    m.v_cache.normal_()
    gemms(tables, timer, m, bw, rate)
    decode_prefill(tables, timer, m, bw, rate, "llama-7b")
    shared_decode_e2e(tables, timer, m, "llama-7b")
    del m
    gc.collect()
    torch.cuda.empty_cache()
    m = LlamaVariants(LlamaConfig.preset("llama-13b"), num_pages=64, device=dev)
    decode_prefill(tables, timer, m, bw, rate, "llama-13b", prefill_tokens=0)
