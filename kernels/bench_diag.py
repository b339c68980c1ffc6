"""Diagnostic section of :mod:`parrotsim.kernels.bench` (``--sections diag``): where the time goes.

* GEMV: each LLaMA-7B weight matrix at M=1, eight layers' matrices back to back in one graph
  (per-call time = total / 8, no launch-gap or cold-start bias), cuBLAS vs skinny variants,
  with and without the fused prologue/residual of the decode path.
* Cascade phases at B=64, G=1, P=6000, S=256: prefix kernel, suffix kernel, merge alone; and
  every mode x split x stages variant at B = 16, 64, 256.
* Prefill pieces at T=4096: norm, SiLU, addmm vs mm, one layer's GEMMs.
"""

from __future__ import annotations

from functools import partial

import torch

from parrotsim.kernels.bench_attention import _shared_setup
from parrotsim.kernels.experimental.skinny import skinny_linear
from parrotsim.kernels.llama import LlamaConfig, LlamaModel
from parrotsim.kernels.llama_ops import rms_norm, silu_mul
from parrotsim.kernels.paged_decode import launch_decode, launch_merge
from parrotsim.kernels.shared_prefix_decode import _prefix_kernel, prefix_tiles
from parrotsim.kernels.shared_prefix_decode import shared_prefix_decode_attention as spda

GEMV_CFGS = [(True, 16, 256, 4, 4), (True, 32, 256, 4, 4), (True, 64, 256, 4, 4),
             (False, 16, 256, 3, 4), (False, 32, 256, 3, 4), (False, 64, 128, 3, 4),
             (False, 32, 512, 2, 8), (False, 16, 512, 3, 4)]


def _chain(fns):
    def run():
        for f in fns:
            f()
    return run


def gemv(tables, timer, bw: float, dev: torch.device) -> None:
    """Per-matrix GEMV bandwidth for each skinny configuration (fused prologue or plain)."""
    m = LlamaModel(LlamaConfig.preset("llama-7b"), num_pages=64, device=dev)
    cfg, n = m.cfg, 8
    h = torch.randn(1, cfg.hidden, dtype=torch.bfloat16, device=dev)
    o = torch.randn(1, cfg.hidden, dtype=torch.bfloat16, device=dev)
    gu = torch.randn(1, 2 * cfg.intermediate, dtype=torch.bfloat16, device=dev)
    specs = {"qkv": ("w_qkv", h, "rmsnorm", "ln_in", False), "o": ("w_o", o, "none", None, True),
             "gate_up": ("w_gate_up", h, "rmsnorm", "ln_post", False),
             "down": ("w_down", gu, "silu_mul", None, True)}
    for name, (wk, x, pro, nk, res) in specs.items():
        ls = m.layers[:n]
        byts = ls[0][wk].numel() * 2
        xin = x[:, : x.shape[1] // 2] if pro == "silu_mul" else x
        us = timer(_chain([partial(torch.matmul, xin, w[wk].t()) for w in ls])) / n
        tables.add("diag_gemv", matrix=name, impl="cublas plain", us=us, TBs=byts / us / 1e6,
                   pct_stream=100 * byts / us / 1e6 / bw)
        for dot, bn, bk, st, wp in GEMV_CFGS:
            for fused in (False, True):
                kw = dict(use_dot=dot, block_n=bn, block_k=bk, num_stages=st, num_warps=wp)
                if fused:
                    fns = [partial(skinny_linear, x, w[wk], pro, w[nk] if nk else None,
                                   residual=h if res else None, **kw) for w in ls]
                else:
                    fns = [partial(skinny_linear, xin, w[wk], **kw) for w in ls]
                us = timer(_chain(fns)) / n
                tables.add("diag_gemv", matrix=name, impl=f"skinny dot={dot} n{bn} k{bk} s{st}"
                           f" w{wp} {'fused' if fused else 'plain'}", us=us,
                           TBs=byts / us / 1e6, pct_stream=100 * byts / us / 1e6 / bw)


def cascade(tables, timer, dev: torch.device) -> None:
    """Phase times at B=64 and all variants at B = 16, 64, 256 (G=1, P=6000, S=256)."""
    b, p = 64, 6000
    q, k, v, pre, suf, sl = _shared_setup(b, p, 256, 1, dev)
    strides = (q.stride(0), q.stride(1), *k.stride()[:3], *v.stride()[:3])
    for spl in (512, 768, 1024, 1536):
        for bn in (64, 128):
            for st in (2, 3):
                bm, _, warps, split_len, nsp = prefix_tiles(b, 1, p, 32, dev, spl, block_n=bn)
                po = torch.empty(b, 32, nsp + 1, 128, dtype=torch.float32, device=dev)
                pl = torch.empty(b, 32, nsp + 1, dtype=torch.float32, device=dev)
                fn = partial(_prefix_kernel[(1, 32, nsp)], q, k, v, pre, p, po, pl, split_len,
                             0.1, b, 32, nsp + 1, *strides, G=1, BM=bm, BN=bn, D=128, PAGE=16,
                             F32=False, num_warps=warps, num_stages=st)
                us = timer(fn)
                tables.add("diag_phase", phase="prefix", cfg=f"spl{split_len} n{bn} s{st}",
                           us=us, TBs=p * 32 * 512 / us / 1e6)
    out = torch.empty_like(q)
    lse = torch.empty(b, 32, dtype=torch.float32, device=dev)
    sbytes = b * 256 * 32 * 512
    for bn in (32, 64, 128):
        for st in (2, 3, 4):
            for wp in (4, 8):
                us = timer(partial(launch_decode, q, k, v, suf, sl, 0.1, 1, None, None, po, pl,
                                   slot0=nsp, block_n=bn, num_warps=wp, num_stages=st))
                tables.add("diag_phase", phase="suffix", cfg=f"n{bn} s{st} w{wp}", us=us,
                           TBs=sbytes / us / 1e6)
    us = timer(partial(launch_decode, q, k, v, suf, sl, 0.1, 1, out, lse, po, pl, slot0=nsp,
                       merge=True))
    tables.add("diag_phase", phase="suffix+merge", cfg=f"nsp{nsp}", us=us, TBs=sbytes / us / 1e6)
    us = timer(partial(launch_merge, po, pl, out, lse))
    tables.add("diag_phase", phase="merge", cfg=f"slots{nsp + 1}", us=us, TBs=0.0)
    for b in (16, 64, 256):
        q, k, v, pre, suf, sl = _shared_setup(b, p, 256, 1, dev)
        for mode in ("fused", "separate", "chained"):
            for spl in (None, 768, 1024, 1536):
                for st in (2, 3):
                    us = timer(partial(spda, q, k, v, pre, p, suf, sl, mode=mode,
                                       prefix_split_tokens=spl, num_stages=st))
                    tables.add("diag_cascade", B=b, mode=mode, spl=spl, stages=st, us=us)


def prefill_pieces(tables, timer, dev: torch.device) -> None:
    """Elementwise ops and GEMMs of one LLaMA-7B layer at T=4096."""
    m = LlamaModel(LlamaConfig.preset("llama-7b"), num_pages=16, device=dev)
    w, t = m.layers[0], 4096
    h = torch.randn(t, 4096, dtype=torch.bfloat16, device=dev)
    a = torch.randn(t, 11008, dtype=torch.bfloat16, device=dev)
    gu = torch.randn(t, 22016, dtype=torch.bfloat16, device=dev)
    ops = {"rms_norm": partial(rms_norm, h, w["ln_in"], 1e-5), "silu_mul": partial(silu_mul, gu),
           "addmm_o": partial(torch.addmm, h, h, w["w_o"].t()),
           "mm_o": partial(torch.matmul, h, w["w_o"].t()),
           "addmm_down": partial(torch.addmm, h, a, w["w_down"].t()),
           "mm_down": partial(torch.matmul, a, w["w_down"].t()),
           "add": partial(torch.add, h, h),
           "layer_linear": partial(m.layer, 0, h.clone(), None)}
    for name, fn in ops.items():
        tables.add("diag_prefill", op=name, us=timer(fn, reps=10))
