"""Attention sections of :mod:`parrotsim.kernels.bench`: GPU correctness at real shapes, paged decode on
unshared KV, shared-prefix vs paged-over-shared-pages, prefill attention.

Bytes: ``tok_bytes = Hkv * D * 2 (K, V) * 2 B``. "logical" bytes are what a non-sharing kernel
reads (every sequence's whole context); "physical" bytes are the distinct KV bytes (the prefix
once plus the suffixes). Both add q and the output. Achieved BW = physical / time, effective
BW = logical / time; the floor is physical / measured streaming-read bandwidth.
"""

from __future__ import annotations

from functools import partial

import torch
import torch.nn.functional as F

from parrotsim.kernels.paged_decode import paged_decode_attention
from parrotsim.kernels.prefill import prefill_attention
from parrotsim.kernels.reference import ref_paged_decode, ref_prefill, ref_shared_prefix_decode
from parrotsim.kernels.shared_prefix_decode import prefix_tiles, shared_prefix_decode_attention

PAGE = 16
D = 128
HQ = 32
BF = torch.bfloat16


def _cache(pages: int, hkv: int, dev: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    return (torch.randn(pages, PAGE, hkv, D, dtype=BF, device=dev),
            torch.randn(pages, PAGE, hkv, D, dtype=BF, device=dev))


def _rel(out: torch.Tensor, ref: torch.Tensor) -> float:
    return float((out.float() - ref).norm() / ref.norm())


def _shared_setup(b: int, p: int, s: int, g: int, dev: torch.device, suffix: list[int] | None = None):
    hkv = HQ // g
    n_pre, n_suf = -(-p // PAGE), -(-s // PAGE)
    k, v = _cache(n_pre + b * n_suf, hkv, dev)
    perm = torch.randperm(n_pre + b * n_suf, device=dev).to(torch.int32)
    prefix = perm[:n_pre]
    suf = perm[n_pre:].view(b, n_suf)
    lens = torch.full((b,), s, dtype=torch.int32, device=dev)
    if suffix is not None:
        lens = torch.tensor(suffix, dtype=torch.int32, device=dev)
    q = torch.randn(b, HQ, D, dtype=BF, device=dev)
    return q, k, v, prefix, suf, lens


def correctness(tables, dev: torch.device) -> None:
    """Kernels vs fp32 references at real head sizes (Hq 32, D 128), ragged lengths."""
    for g in (1, 4, 8):
        lens = [1, 6000, 17, 3001, 4096, 250]
        k, v = _cache(sum(-(-n // PAGE) for n in lens) + 1, HQ // g, dev)
        perm = torch.randperm(k.shape[0], device=dev).to(torch.int32)
        bt = torch.zeros(len(lens), 375, dtype=torch.int32, device=dev)
        i = 0
        for r, n in enumerate(lens):
            npg = -(-n // PAGE)
            bt[r, :npg] = perm[i:i + npg]
            i += npg
        sl = torch.tensor(lens, dtype=torch.int32, device=dev)
        q = torch.randn(len(lens), HQ, D, dtype=BF, device=dev)
        ro, rl = ref_paged_decode(q, k, v, bt, sl)
        for ns in (None, 1, 7):
            o, lse = paged_decode_attention(q, k, v, bt, sl, num_splits=ns)
            _ok(tables, f"paged G={g} splits={ns}", _rel(o, ro), float((lse - rl).abs().max()))
        for p, suffix in ((6000, [0, 300, 17, 256, 1, 99, 160, 31]), (1003, [5, 0, 256])):
            q, k, v, pre, suf, sl = _shared_setup(len(suffix), p, 300, g, dev, suffix)
            ro, rl = ref_shared_prefix_decode(q, k, v, pre, p, suf, sl)
            for mode in ("fused", "separate", "concurrent"):
                o, lse = shared_prefix_decode_attention(q, k, v, pre, p, suf, sl, mode=mode)
                _ok(tables, f"shared G={g} P={p} {mode}", _rel(o, ro),
                    float((lse - rl).abs().max()))
    for g in (1, 4):
        ctx, new = [0, 3000], [1000, 300]
        k, v = _cache(500, HQ // g, dev)
        bt = torch.randperm(500, device=dev).to(torch.int32).view(2, 250)
        cu = torch.tensor([0, 1000, 1300], dtype=torch.int32, device=dev)
        ct = torch.tensor(ctx, dtype=torch.int32, device=dev)
        q = torch.randn(1300, HQ, D, dtype=BF, device=dev)
        o = prefill_attention(q, k, v, bt, cu, ct, max(new))
        _ok(tables, f"prefill G={g}", _rel(o, ref_prefill(q, k, v, bt, cu, ct)), 0.0)


def _ok(tables, kernel: str, rel_err: float, lse_err: float) -> None:
    ok = rel_err <= 1e-2 and lse_err <= 1e-3
    tables.add("correctness", kernel=kernel, rel_err=rel_err, lse_err=lse_err, ok=ok)


def paged_unshared(tables, timer, bw: float, dev: torch.device, b: int = 64,
                   ctx: int = 6000) -> None:
    """Paged decode on private (unshared) pages: config sweep at G=1, then G=4, 8."""
    for g in (1, 4, 8):
        hkv = HQ // g
        n = -(-ctx // PAGE)
        k, v = _cache(b * n, hkv, dev)
        bt = torch.randperm(b * n, device=dev).to(torch.int32).view(b, n)
        sl = torch.full((b,), ctx, dtype=torch.int32, device=dev)
        q = torch.randn(b, HQ, D, dtype=BF, device=dev)
        byts = b * ctx * hkv * D * 4 + 2 * b * HQ * D * 2
        configs = [(bn, st, w, ns) for bn in (64, 128) for st in (2, 3, 4) for w in (4, 8)
                   for ns in (1, 2)] if g == 1 else [(64, 2, 4, None), (128, 3, 4, None),
                                                      (64, 3, 4, 2), (128, 2, 8, 4)]
        for bn, st, w, ns in configs:
            us = timer(partial(paged_decode_attention, q, k, v, bt, sl, num_splits=ns,
                               block_n=bn, num_warps=w, num_stages=st))
            tables.add("paged_unshared", B=b, ctx=ctx, G=g, block_n=bn, stages=st, warps=w,
                       splits=ns, us=us, TBs=byts / us / 1e6,
                       pct_stream=100 * byts / us / 1e6 / bw)
        del k, v


def shared_prefix(tables, timer, bw: float, dev: torch.device, configs) -> None:
    """Shared-prefix kernel vs the paged kernel over shared prefix pages (and private copies)."""
    for b, p, s, g in configs:
        hkv = HQ // g
        q, k, v, pre, suf, sl = _shared_setup(b, p, s, g, dev)
        full = torch.cat([pre.expand(b, -1), suf], dim=1).contiguous()
        fl = sl + p
        tok = hkv * D * 4
        qo = 2 * b * HQ * D * 2
        logical, physical = b * (p + s) * tok + qo, (p + b * s) * tok + qo
        base = {ns: timer(partial(paged_decode_attention, q, k, v, full, fl, num_splits=ns))
                for ns in (None, 1, 2, 4)}
        base_ns = min(base, key=base.get)
        unique_us = float("nan")
        if b * (p + s) * tok < 30e9 and g == 1 and p == 6000:
            n_pre = pre.numel()
            ku = torch.cat([k, k[pre.long()].repeat(b, 1, 1, 1)])
            vu = torch.cat([v, v[pre.long()].repeat(b, 1, 1, 1)])
            own = k.shape[0] + torch.arange(b * n_pre, device=dev, dtype=torch.int32)
            ut = torch.cat([own.view(b, n_pre), suf], dim=1).contiguous()
            unique_us = timer(partial(paged_decode_attention, q, ku, vu, ut, fl))
            del ku, vu
        variants = {}
        for mode in ("fused", "separate", "concurrent"):
            for spl in (None, 768, 1536):
                for bm in (None, 16):
                    variants[(mode, spl, bm)] = timer(partial(
                        shared_prefix_decode_attention, q, k, v, pre, p, suf, sl, mode=mode,
                        prefix_split_tokens=spl, prefix_block_m=bm))
        best = min(variants, key=variants.get)
        heur = timer(partial(shared_prefix_decode_attention, q, k, v, pre, p, suf, sl))
        bm, _, _, split_len, nsp = prefix_tiles(b, g, p, hkv, dev)
        floor = physical / bw / 1e6
        us = variants[best]
        tables.add("shared_prefix", B=b, P=p, S=s, G=g, base_shared_us=base[base_ns],
                   base_splits=base_ns, base_unique_us=unique_us, cascade_default_us=heur,
                   cascade_best_us=us, best=f"{best[0]}/spl={best[1]}/bm={best[2]}",
                   heur_BM=bm, heur_split=split_len, heur_nsp=nsp,
                   speedup_vs_shared=base[base_ns] / us, speedup_vs_unique=unique_us / us,
                   achieved_TBs=physical / us / 1e6, effective_TBs=logical / us / 1e6,
                   base_effective_TBs=logical / base[base_ns] / 1e6, floor_us=floor,
                   pct_floor=100 * floor / us)
        del q, k, v, full


def prefill(tables, timer, dev: torch.device) -> None:
    """Prefill attention: T new tokens, ctx cached tokens, one sequence (Hq = Hkv = 32)."""
    for t, ctx in ((4096, 0), (512, 4096), (2048, 2048)):
        n = -(-(t + ctx) // PAGE)
        k, v = _cache(n, HQ, dev)
        bt = torch.arange(n, device=dev, dtype=torch.int32)[None]
        cu = torch.tensor([0, t], dtype=torch.int32, device=dev)
        ct = torch.tensor([ctx], dtype=torch.int32, device=dev)
        q = torch.randn(t, HQ, D, dtype=BF, device=dev)
        flops = 4 * HQ * D * t * (ctx + (t + 1) / 2)
        for bm, bn, w, st in ((128, 64, 8, 3), (128, 64, 4, 3), (64, 64, 4, 3),
                              (128, 128, 8, 2), (128, 32, 4, 4)):
            us = timer(partial(prefill_attention, q, k, v, bt, cu, ct, t, block_m=bm,
                               block_n=bn, num_warps=w, num_stages=st))
            tables.add("prefill_attention", T=t, ctx=ctx, impl=f"triton {bm}x{bn} w{w} s{st}",
                       us=us, TFLOPs=flops / us / 1e6)
        if ctx == 0:
            kk = k.view(-1, HQ, D)[:t].transpose(0, 1)[None]
            vv = v.view(-1, HQ, D)[:t].transpose(0, 1)[None]
            qq = q.transpose(0, 1)[None]
            us = timer(partial(F.scaled_dot_product_attention, qq, kk, vv, is_causal=True))
            tables.add("prefill_attention", T=t, ctx=ctx, impl="torch sdpa (contiguous)",
                       us=us, TFLOPs=flops / us / 1e6)
