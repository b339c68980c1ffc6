"""Where the cascade loses at G >= 4: its prefix phase against FlashAttention's (a diagnostic).

    python -m parrotsim.kernels.bench_flash_prefix --out DIR [--shapes SPEC] [--reps 40]

At G >= 4 the cascade's prefix phase is a product of B*G query rows by P prefix keys per KV head
(kernels/results/session7: 111-138 TFLOP/s, a bf16 GEMM runs ~790). This times, per shape
(G, B, P, S; Hq = 32, D = 128; CUDA-graph replays, L2 flushed, median of ``reps``):

* ``cascade_us``: the shared-prefix kernel as shipped (mode "auto");
* ``prefix_us``: its prefix launch alone (the tiling "auto" picks for mode "concurrent");
* ``flash_prefix_us``: torch's FlashAttention (``aten._scaled_dot_product_flash_attention``,
  which returns the log-sum-exp) over the same prefix rows, the prefix pages read in place as
  one [Hkv, P, D] strided view (the bench lays the prefix out in consecutive pages);
* ``suffix_us``: the paged kernel over the suffixes alone (with its own merge);
* ``hybrid_us``: FlashAttention's prefix phase, the paged suffix phase and a log-sum-exp merge
  of the two in torch, in one graph, and its max |difference| from the cascade (``err``);
* ``paged_shared_us``: the paged kernel over the shared pages (the 5x baseline) and the bytes
  floor (``floor_us``, at the best streaming bandwidth measured in the same run).

Writes ``flash_prefix.csv`` and prints each row. Needs CUDA.
"""

from __future__ import annotations

import argparse
from functools import partial
from pathlib import Path

import torch

from parrotsim.kernels._common import LOG2E, default_scale
from parrotsim.kernels.bench_cases import shared_batch, tok_bytes
from parrotsim.kernels.bench_shapes import parse_shapes, suffixes
from parrotsim.kernels.bench_util import CsvLog, RandomKV, Timer, measure_bandwidth
from parrotsim.kernels.paged_decode import paged_decode_attention
from parrotsim.kernels.prefix_tile import _prefix_kernel, prefix_tiles
from parrotsim.kernels.shared_prefix_decode import shared_prefix_decode_attention

HQ, D = 32, 128
SHAPES = "4,8x32,64x6000x256"
FIELDS = ["G", "B", "P", "S", "floor_us", "paged_shared_us", "cascade_us", "prefix_us",
          "flash_prefix_us", "suffix_us", "hybrid_us", "err", "cascade_pct_floor",
          "hybrid_pct_floor", "cascade_x", "hybrid_x"]


def flash_prefix(sb, g: int) -> tuple[torch.Tensor, torch.Tensor]:
    """FlashAttention of every (sequence, query head) row over the shared prefix: output
    [B, Hq, D] and natural-log LSE [B, Hq]."""
    b, hq, d = sb.q.shape
    hkv = hq // g
    rows = sb.q.view(b, hkv, g, d).transpose(0, 1).reshape(1, hkv, b * g, d)
    pages, p = -(-sb.prefix_len // 16), sb.prefix_len
    k = sb.k[:pages].reshape(1, pages * 16, hkv, d)[:, :p].transpose(1, 2)
    v = sb.v[:pages].reshape(1, pages * 16, hkv, d)[:, :p].transpose(1, 2)
    out, lse = torch.ops.aten._scaled_dot_product_flash_attention(rows, k, v)[:2]
    o = out.view(hkv, b, g, d).transpose(0, 1).reshape(b, hq, d)
    return o, lse.view(hkv, b, g).transpose(0, 1).reshape(b, hq)


def hybrid(sb, g: int) -> torch.Tensor:
    """FlashAttention's prefix phase + the paged suffix phase, merged by log-sum-exp."""
    op, lp = flash_prefix(sb, g)
    os_, ls = paged_decode_attention(sb.q, sb.k, sb.v, sb.suffix_tables, sb.suffix_lens)
    m = torch.maximum(lp, ls)
    wp, ws = torch.exp(lp - m), torch.exp(ls - m)
    return ((op.float() * wp[..., None] + os_.float() * ws[..., None])
            / (wp + ws)[..., None]).to(sb.q.dtype)


def prefix_only(sb, g: int) -> None:
    """The cascade's prefix launch as mode "concurrent" configures it."""
    b, hq, d = sb.q.shape
    hkv = hq // g
    bm, bn, warps, split_len, nsp = prefix_tiles(b, g, sb.prefix_len, hkv, sb.q.device,
                                                 at_most_one_wave=True)
    po = torch.empty(b, hq, nsp, d, dtype=torch.float32, device=sb.q.device)
    plse = torch.empty(b, hq, nsp, dtype=torch.float32, device=sb.q.device)
    strides = (sb.q.stride(0), sb.q.stride(1), *sb.k.stride()[:3], *sb.v.stride()[:3])

    def run() -> None:
        _prefix_kernel[(-(-(b * g) // bm), hkv, nsp)](
            sb.q, sb.k, sb.v, sb.prefix, sb.prefix_len, po, plse, split_len,
            default_scale(d, None) * LOG2E, b * g, hq, nsp, *strides, G=g, BM=bm, BN=bn, D=d,
            PAGE=16, F32=False, num_warps=warps, num_stages=2)
    return run


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--shapes", default=SHAPES)
    ap.add_argument("--reps", type=int, default=40)
    args = ap.parse_args()
    dev = torch.device("cuda")
    timer, kv = Timer(dev), RandomKV(dev)
    bw = measure_bandwidth(timer, dev)["floor_TBs"]
    args.out.mkdir(parents=True, exist_ok=True)
    log = CsvLog(args.out / "flash_prefix.csv", FIELDS)
    for g, b, p, s, ragged in parse_shapes(args.shapes):
        suf = suffixes(b, s, ragged, seed=1)
        sb = shared_batch(kv, p, suf, HQ, g, D)
        floor = ((p + sum(suf)) * tok_bytes(HQ // g, D) + 2 * b * HQ * D * 2) / bw / 1e6
        t = {
            "paged_shared_us": timer(partial(paged_decode_attention, sb.q, sb.k, sb.v,
                                             *sb.paged_tables())),
            "cascade_us": timer(partial(shared_prefix_decode_attention, *sb.args())),
            "prefix_us": timer(prefix_only(sb, g)),
            "flash_prefix_us": timer(partial(flash_prefix, sb, g)),
            "suffix_us": timer(partial(paged_decode_attention, sb.q, sb.k, sb.v,
                                       sb.suffix_tables, sb.suffix_lens)),
            "hybrid_us": timer(partial(hybrid, sb, g)),
        }
        ref = shared_prefix_decode_attention(*sb.args())[0].float()
        err = float((hybrid(sb, g).float() - ref).abs().max())
        row = {"G": g, "B": b, "P": p, "S": s, "floor_us": floor, **t, "err": err,
               "cascade_pct_floor": 100 * floor / t["cascade_us"],
               "hybrid_pct_floor": 100 * floor / t["hybrid_us"],
               "cascade_x": t["paged_shared_us"] / t["cascade_us"],
               "hybrid_x": t["paged_shared_us"] / t["hybrid_us"]}
        log.add(**row)


if __name__ == "__main__":
    main()
