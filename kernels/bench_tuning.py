"""Tuning sections of :mod:`parrotsim.kernels.bench` (``--sections tune_*``) for the v3 kernels.

* ``tune_cascade``: shared-prefix mode "concurrent" (prefix and suffix kernels on two streams)
  per prefix split and suffix tile config, against "separate" and "fused" (LLaMA-7B heads,
  S=256).
* ``tune_gemv``: the PDL GEMV of :mod:`parrotsim.kernels.gemv` per LLaMA-7B matrix and tile config,
  eight layers' matrices back to back in one CUDA graph (so PDL overlap between kernels shows),
  with the real prologue/epilogue, against cuBLAS.
* ``tune_prefill``: bf16 GEMM rate as a burst (one 8192^3 product after an L2 flush) and
  sustained (~100 ms of back-to-back products) with SM clock / power samples taken while the
  GPU runs, and the 7B prefill of 4096 tokens per SDPA backend, also with clock samples.
"""

from __future__ import annotations

import statistics
import time
from functools import partial

import torch

from parrotsim.kernels.bench_attention import _shared_setup
from parrotsim.kernels.bench_diag import _chain
from parrotsim.kernels.gemv import gemv
from parrotsim.kernels.llama import LlamaConfig, LlamaModel
from parrotsim.kernels.llama_batch import PAGE_SIZE, SeqChunk, build_batch
from parrotsim.kernels.shared_prefix_decode import shared_prefix_decode_attention as spda

GEMV_TILES = [None, (32, 256, 512, 4, 3), (8, 256, 1024, 2, 4), (4, 1024, 2048, 4, 3),
              (16, 512, 2048, 8, 3), (32, 256, 1024, 4, 3), (16, 256, 1024, 2, 4),
              (8, 256, 2048, 2, 4), (2, 1024, 2048, 4, 3), (4, 512, 2048, 4, 4),
              (8, 512, 2048, 8, 3), (8, 1024, 4096, 8, 2), (16, 512, 4096, 8, 3),
              (4, 1024, 4096, 8, 2)]  # (BN, BK, PRE, warps, stages); None = gemv_tiles rule


def cascade(tables, timer, bw: float, dev: torch.device) -> None:
    """Mode "concurrent" (defaults: prefix split at most one program per SM, suffix 128 x 2
    stages) per prefix pipelining and merge warps; separate / fused for scale."""
    sweeps = {(64, 6000, 256, 1): ((2, 3), (32, 64, 128), (1, 2, 4, 8)),
              (256, 6000, 256, 1): ((2, 3), (64,), (2, 4)),
              (64, 6000, 256, 4): ((2, 3), (64,), (2, 4)),
              (16, 6000, 256, 1): ((2,), (64,), (4,))}
    for (b, p, s, g), (stages, bns, mws) in sweeps.items():
        hkv = 32 // g
        q, k, v, pre, suf, sl = _shared_setup(b, p, s, g, dev)
        floor = ((p + b * s) * hkv * 128 * 4 + 2 * b * 32 * 128 * 2) / bw / 1e6
        res = {}
        for st in stages:
            for bn in bns:
                for mw in mws:
                    us = timer(partial(spda, q, k, v, pre, p, suf, sl, mode="concurrent",
                                       num_stages=st, prefix_block_n=bn, merge_warps=mw))
                    res[(st, bn, mw)] = us
                    tables.add("tune_cascade", B=b, P=p, S=s, G=g, mode="concurrent",
                               cfg=f"prefix s{st} n{bn} merge w{mw}", us=us,
                               pct_floor=100 * floor / us)
        for mode in ("auto", "separate", "fused"):
            us = timer(partial(spda, q, k, v, pre, p, suf, sl, mode=mode))
            tables.add("tune_cascade", B=b, P=p, S=s, G=g, mode=mode, cfg="default", us=us,
                       pct_floor=100 * floor / us)
        best = min(res, key=res.get)
        tables.add("tune_cascade_best", B=b, G=g, best=str(best), us=res[best],
                   pct_floor=100 * floor / res[best])


def gemv_tiles(tables, timer, bw: float, dev: torch.device) -> None:
    """PDL GEMV per matrix and tile config, 8 layers back to back (per-call time = total/8)."""
    m = LlamaModel(LlamaConfig.preset("llama-7b"), num_pages=64, device=dev)
    cfg, n = m.cfg, 8
    h = torch.randn(1, cfg.hidden, dtype=torch.bfloat16, device=dev)
    o = torch.randn(1, cfg.hidden, dtype=torch.bfloat16, device=dev)
    gu = torch.randn(1, 2 * cfg.intermediate, dtype=torch.bfloat16, device=dev)
    lo = torch.empty(1, cfg.vocab_size, dtype=torch.float32, device=dev)
    ls = m.layers[:n]
    specs = {"qkv": ([w["w_qkv"] for w in ls], h, "rmsnorm", [w["ln_in"] for w in ls], None),
             "o": ([w["w_o"] for w in ls], o, "none", None, h),
             "gate_up": ([w["w_gate_up"] for w in ls], h, "rmsnorm",
                         [w["ln_post"] for w in ls], None),
             "down": ([w["w_down"] for w in ls], gu, "silu_mul", None, h),
             "lm_head": ([m.lm_head] * n, h, "rmsnorm", [m.norm] * n, None)}
    for name, (ws, x, pro, nws, res) in specs.items():
        byts = ws[0].numel() * 2
        xin = x[:, : x.shape[1] // 2] if pro == "silu_mul" else x
        us = timer(_chain([partial(torch.matmul, xin, w.t()) for w in ws])) / n
        tables.add("tune_gemv", matrix=name, impl="cublas plain", us=us, TBs=byts / us / 1e6,
                   pct_stream=100 * byts / us / 1e6 / bw)
        out = lo if name == "lm_head" else None
        for i, tiles in enumerate(GEMV_TILES):
            for pdl in ((True, False) if i == 0 else (True,)):
                fns = [partial(gemv, x, w, pro, nws[j] if nws else None, residual=res,
                               out=res if res is not None else out, pdl=pdl, tiles=tiles)
                       for j, w in enumerate(ws)]
                us = timer(_chain(fns)) / n
                tables.add("tune_gemv", matrix=name, impl=f"gemv {tiles} pdl={pdl}", us=us,
                           TBs=byts / us / 1e6, pct_stream=100 * byts / us / 1e6 / bw)


def _clocks_during(fn, reps: int) -> tuple[float, dict[str, float]]:
    """Run ``fn`` ``reps`` times back to back (no flush); sample the SM clock (MHz) and power
    (mW) from NVML while the GPU works. Returns (ms per rep, sample stats)."""
    fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(reps):
        fn()
    end.record()
    clk, pw = [], []
    while not end.query():
        try:
            clk.append(torch.cuda.clock_rate())
            pw.append(torch.cuda.power_draw())
        except Exception:  # NVML missing: no samples
            break
        time.sleep(0.002)
    torch.cuda.synchronize()
    stats = {"clk_med_MHz": statistics.median(clk) if clk else float("nan"),
             "clk_min_MHz": min(clk) if clk else float("nan"),
             "power_med_W": statistics.median(pw) / 1e3 if pw else float("nan"),
             "samples": len(clk)}
    return start.elapsed_time(end) / reps, stats


def prefill_rates(tables, timer, rate: float, dev: torch.device) -> None:
    """GEMM rate burst vs sustained (with clocks), and 7B prefill T=4096 per SDPA backend."""
    a = torch.randn(8192, 8192, dtype=torch.bfloat16, device=dev)
    bm = torch.randn(8192, 8192, dtype=torch.bfloat16, device=dev)
    flops = 2 * 8192 ** 3
    burst = timer(partial(torch.matmul, a, bm), reps=15)
    tables.add("tune_rates", what="gemm 8192^3 burst (L2 flushed, idle gaps)", ms=burst / 1e3,
               TFLOPs=flops / burst / 1e6)
    g = timer.prepare(_chain([partial(torch.matmul, a, bm)] * 10))
    ms, st = _clocks_during(g, 8)
    tables.add("tune_rates", what="gemm 8192^3 sustained (80 back to back)", ms=ms / 10,
               TFLOPs=flops * 10 / ms / 1e9, **st)
    del a, bm
    m = LlamaModel(LlamaConfig.preset("llama-7b"), num_pages=300, device=dev)
    t = 4096
    toks = torch.randint(0, m.cfg.vocab_size, (t,)).tolist()
    pb = build_batch([SeqChunk(toks, 0, list(range(t // PAGE_SIZE)))], [], dev)
    for backend in (None, "cudnn", "flash"):
        m.sdpa_backend = backend
        try:
            ms, st = _clocks_during(partial(m.forward, pb), 5)
        except Exception as e:  # a backend may refuse these strides
            tables.add("tune_rates", what=f"prefill T={t} sdpa={backend}", error=str(e)[:120])
            continue
        tables.add("tune_rates", what=f"prefill T={t} sdpa={backend} (5 back to back)", ms=ms,
                   **st)
    ms, st = _clocks_during(partial(m.forward_linear_only, t), 3)
    tables.add("tune_rates", what=f"linear only T={t} (3 back to back)", ms=ms, **st)
