"""What the page gather costs the decode kernels: descriptor (TMA) reads of consecutive pages.

    python -m parrotsim.kernels.bench_desc --out DIR [--cascade SPEC] [--paged SPEC]
                                           [--budget-s 420] [--reps 30]

Two diagnostics for issue 18's kernel targets (Hq = 32, D = 128; CUDA-graph replays, L2
flushed, median of ``reps``; floors at the best streaming rate measured in the same run):

* ``cascade.csv`` (shapes G x B x P x S, default issue 18's B=64/32, P=6000, S=256 and G=4/8 at
  P 3000/12000): the shipped shared-prefix kernel (``cascade_us``, mode "auto") and its prefix
  launch alone (``prefix_us``, the tiling "concurrent" uses) against the descriptor prefix phase
  of :mod:`parrotsim.kernels.experimental.prefix_desc` at every tiling of :data:`PREFIX_TILES`
  x two split rules (``desc_prefix_us`` the best, ``desc_tile`` which), then that tiling's whole
  cascade (``desc_cascade_us``: descriptor prefix and the shipped suffix phase on two streams,
  the merge) with its max |difference| from the shipped kernel (``err``); % of the bytes floor
  and x over the paged kernel over the shared pages for both;
* ``paged.csv`` (default G 1/4/8 x B 48/100/200 x P 500/3000/12000, S 0): the paged kernel
  (``paged_us``, its default choice), torch SDPA on the contiguous gather (``sdpa_us``) and the
  descriptor decode of :mod:`parrotsim.kernels.experimental.decode_desc` over the same
  consecutive pages, best of :data:`DECODE_TILES` at the paged kernel's split count and at
  ``wave_splits``' (``desc_us``, ``desc_tile``); and the paged kernel whose page gather is one
  descriptor copy per page through the page table
  (:mod:`parrotsim.kernels.experimental.paged_desc`, best of :data:`PAGE_DESC_TILES` at the same
  split counts: ``pdesc_us``, ``pdesc_tile``), both again on a shuffled page table
  (``paged_shuffled_us``, ``pdesc_shuffled_us``: the same pages in random order); and that
  kernel over 64-token pages in a shuffled table, where a tile is one copy of a whole page
  (best of :data:`BIG_PAGE_TILES`: ``page64_us``, ``page64_tile``; not the project's 16-token
  KV semantics: what a larger page would buy).

Prints each row. On CUDA (Hopper, for the bulk tensor copies); off the GPU it runs under Triton's
interpreter with wall-clock timings (a smoke test, not a measurement).
"""

from __future__ import annotations

import argparse
import time
from functools import partial
from pathlib import Path

import torch

from parrotsim.kernels._common import LOG2E, default_scale, num_sms
from parrotsim.kernels.bench_cases import private_batch, shared_batch, tok_bytes
from parrotsim.kernels.bench_flash_prefix import prefix_only
from parrotsim.kernels.bench_shapes import _sdpa, parse_shapes, suffixes
from parrotsim.kernels.bench_util import CpuTimer, CsvLog, RandomKV, Timer, measure_bandwidth
from parrotsim.kernels.experimental.decode_desc import decode_contiguous
from parrotsim.kernels.experimental.paged_desc import paged_decode_desc
from parrotsim.kernels.experimental.prefix_desc import (
    launch_prefix_desc,
    prefix_descriptors,
    shared_prefix_contiguous,
    split_tokens,
)
from parrotsim.kernels.paged_decode import choose_config, paged_decode_attention, wave_splits
from parrotsim.kernels.shared_prefix_decode import shared_prefix_decode_attention

HQ, D = 32, 128
CASCADE = "1,4,8x32,64x6000x256;4,8x64x3000,12000x256"
PAGED = "1,4,8x48,100,200x500,3000,12000x0"
#: (BM, BN, warps, stages) of the descriptor prefix phase
PREFIX_TILES = [(64, 64, 4, 2), (64, 64, 4, 3), (64, 128, 4, 2), (64, 128, 4, 3),
                (128, 64, 8, 2), (128, 64, 8, 3), (128, 64, 8, 4), (128, 128, 8, 2),
                (128, 128, 8, 3)]
#: (BN, warps, stages) of the descriptor decode
DECODE_TILES = [(64, 4, 3), (64, 4, 4), (128, 4, 2), (128, 4, 3), (128, 8, 3)]
#: (pages per tile, warps, stages) of the per-page descriptor decode
PAGE_DESC_TILES = [(1, 4, 3), (1, 4, 5), (2, 4, 3), (2, 4, 4), (4, 4, 2), (4, 4, 3), (4, 4, 4),
                   (4, 8, 3)]
#: (pages per tile, warps, stages) over 64-token pages
BIG_PAGE = 64
BIG_PAGE_TILES = [(1, 4, 2), (1, 4, 3), (1, 4, 4), (2, 4, 2), (2, 4, 3), (2, 8, 3)]
CASCADE_FIELDS = ["G", "B", "P", "S", "floor_us", "paged_shared_us", "cascade_us", "prefix_us",
                  "suffix_us", "desc_prefix_us", "desc_tile", "desc_cascade_us",
                  "desc_separate_us", "err", "cascade_pct_floor", "desc_pct_floor",
                  "cascade_x", "desc_x", "tiles_failed"]
PAGED_FIELDS = ["G", "B", "P", "bw_TBs", "floor_us", "paged_us", "paged_splits", "sdpa_us",
                "desc_us", "desc_tile", "paged_pct_floor", "sdpa_pct_floor", "desc_pct_floor",
                "err", "tiles_failed", "pdesc_us", "pdesc_tile", "pdesc_pct_floor", "pdesc_err",
                "paged_shuffled_us", "pdesc_shuffled_us", "page64_us", "page64_tile",
                "page64_pct_floor", "page64_err"]


def _best(timer, candidates: dict, reps: int) -> tuple[str, float, int]:
    """The fastest candidate (name, us) and how many failed to compile or run."""
    best, failed = ("", float("inf")), 0
    for name, fn in candidates.items():
        try:
            us = timer(fn, reps=reps)
        except Exception as e:  # noqa: BLE001 - a tiling over the shared-memory limit
            print(f"  {name}: {type(e).__name__}: {str(e)[:120]}", flush=True)
            failed += 1
            continue
        if us < best[1]:
            best = (name, us)
    return best[0], best[1], failed


def cascade_row(timer, kv: RandomKV, g: int, b: int, p: int, s: int, bw: float,
                reps: int) -> dict:
    """One row of ``cascade.csv``."""
    sb = shared_batch(kv, p, suffixes(b, s, False, seed=1), HQ, g, D)
    hkv = HQ // g
    floor = ((p + b * s) * tok_bytes(hkv, D) + 2 * b * HQ * D * 2) / bw / 1e6
    args = (sb.q, sb.k, sb.v, 0, p, sb.suffix_tables, sb.suffix_lens)
    row = {"G": g, "B": b, "P": p, "S": s, "floor_us": floor,
           "paged_shared_us": timer(partial(paged_decode_attention, sb.q, sb.k, sb.v,
                                            *sb.paged_tables()), reps=reps),
           "cascade_us": timer(partial(shared_prefix_decode_attention, *sb.args()), reps=reps),
           "prefix_us": timer(prefix_only(sb, g), reps=reps),
           "suffix_us": timer(partial(paged_decode_attention, sb.q, sb.k, sb.v,
                                      sb.suffix_tables, sb.suffix_lens), reps=reps)}
    sms = num_sms(sb.q.device)
    cands = {}
    for bm, bn, w, st in PREFIX_TILES:
        one_wave = max(1, sms // (-(-(b * g) // bm) * hkv))
        for splits in sorted({one_wave, 2 * one_wave}):
            cands[f"{bm}x{bn}w{w}s{st}/{splits}"] = _prefix_phase(sb, g, bm, bn, w, st,
                                                                  splits)
    name, us, failed = _best(timer, cands, reps)
    row.update(desc_prefix_us=us, desc_tile=name, tiles_failed=failed)
    if name:
        tile, splits = name.split("/")
        bm, rest = tile.split("x")
        bn, rest = rest.split("w")
        w, st = rest.split("s")
        kw = dict(block_m=int(bm), block_n=int(bn), num_warps=int(w), num_stages=int(st),
                  prefix_splits=int(splits))
        row["desc_cascade_us"] = timer(partial(shared_prefix_contiguous, *args, **kw), reps=reps)
        row["desc_separate_us"] = timer(partial(shared_prefix_contiguous, *args, **kw,
                                                concurrent=False), reps=reps)
        ref = shared_prefix_decode_attention(*sb.args())[0].float()
        row["err"] = float((shared_prefix_contiguous(*args, **kw)[0].float() - ref).abs().max())
        row["desc_pct_floor"] = 100 * floor / row["desc_cascade_us"]
        row["desc_x"] = row["paged_shared_us"] / row["desc_cascade_us"]
    row["cascade_pct_floor"] = 100 * floor / row["cascade_us"]
    row["cascade_x"] = row["paged_shared_us"] / row["cascade_us"]
    return row


def _prefix_phase(sb, g: int, bm: int, bn: int, warps: int, stages: int, splits: int):
    """The descriptor prefix launch alone, its buffers and descriptors made once."""
    b, hq, d = sb.q.shape
    p = sb.prefix_len
    split_len = split_tokens(p, splits, bn)
    nsp = -(-p // split_len)
    po = torch.empty(b, hq, nsp, d, dtype=torch.float32, device=sb.q.device)
    plse = torch.empty(b, hq, nsp, dtype=torch.float32, device=sb.q.device)
    descs = prefix_descriptors(sb.k, sb.v, 0, p, bn)
    return partial(launch_prefix_desc, sb.q, descs, p, po, plse, hq // g,
                   default_scale(d, None) * LOG2E, bm, bn, split_len, nsp, warps, stages)


def paged_row(timer, kv: RandomKV, g: int, b: int, p: int, bw: float, reps: int) -> dict:
    """One row of ``paged.csv`` (uniform private batch of ``p`` tokens per sequence)."""
    pb = private_batch(kv, [p] * b, HQ, g, D)
    hkv = HQ // g
    floor = (b * p * tok_bytes(hkv, D) + 2 * b * HQ * D * 2) / bw / 1e6
    width = pb.tables.shape[1] * 16
    cfg = choose_config(b, hkv, g, width, pb.q.device)
    first = pb.tables[:, 0].contiguous()
    row = {"G": g, "B": b, "P": p, "bw_TBs": bw, "floor_us": floor, "paged_splits": cfg.splits,
           "paged_us": timer(partial(paged_decode_attention, pb.q, pb.k, pb.v, pb.tables,
                                     pb.lens), reps=reps),
           "sdpa_us": timer(_sdpa(pb, [p] * b, g), reps=reps)}
    waves = wave_splits(b * hkv, p, num_sms(pb.q.device))
    cands = {f"{bn}w{w}s{st}/{sp}": partial(decode_contiguous, pb.q, pb.k, pb.v, first, pb.lens,
                                            p, num_splits=sp, block_n=bn, num_warps=w,
                                            num_stages=st)
             for bn, w, st in DECODE_TILES for sp in sorted({cfg.splits, waves})}
    name, us, failed = _best(timer, cands, reps)
    row.update(desc_us=us, desc_tile=name, tiles_failed=failed)
    if name:
        ref = paged_decode_attention(pb.q, pb.k, pb.v, pb.tables, pb.lens)[0].float()
        row["err"] = float((cands[name]()[0].float() - ref).abs().max())
        row["desc_pct_floor"] = 100 * floor / us
    row.update(_per_page_desc(timer, pb, p, sorted({cfg.splits, waves}), floor, reps))
    row["tiles_failed"] += row.pop("pdesc_failed")
    row.update(_big_pages(timer, kv, pb, p, sorted({cfg.splits, waves}), floor, reps))
    row["tiles_failed"] += row.pop("page64_failed")
    row["paged_pct_floor"] = 100 * floor / row["paged_us"]
    row["sdpa_pct_floor"] = 100 * floor / row["sdpa_us"]
    return row


def _per_page_desc(timer, pb, p: int, splits: list[int], floor: float, reps: int) -> dict:
    """The per-page descriptor kernel's best tile on ``pb``'s table, and it and the paged
    kernel on the same pages in shuffled order."""
    def pdesc(tables, pages, w, st, sp):
        return partial(paged_decode_desc, pb.q, pb.k, pb.v, tables, pb.lens, p, num_splits=sp,
                       pages_per_tile=pages, num_warps=w, num_stages=st)
    cands = {f"{pg}pw{w}s{st}/{sp}": pdesc(pb.tables, pg, w, st, sp)
             for pg, w, st in PAGE_DESC_TILES for sp in splits}
    name, us, failed = _best(timer, cands, reps)
    row = {"pdesc_us": us, "pdesc_tile": name, "pdesc_failed": failed}
    if not name:
        return row
    ref = paged_decode_attention(pb.q, pb.k, pb.v, pb.tables, pb.lens)[0].float()
    row["pdesc_err"] = float((cands[name]()[0].float() - ref).abs().max())
    row["pdesc_pct_floor"] = 100 * floor / us
    order = torch.randperm(pb.tables.numel(), device=pb.tables.device)
    shuffled = pb.tables.flatten()[order].view_as(pb.tables).contiguous()
    row["paged_shuffled_us"] = timer(partial(paged_decode_attention, pb.q, pb.k, pb.v, shuffled,
                                             pb.lens), reps=reps)
    tile, sp = name.split("/")
    pg, rest = tile.split("pw")
    w, st = rest.split("s")
    row["pdesc_shuffled_us"] = timer(pdesc(shuffled, int(pg), int(w), int(st), int(sp)),
                                     reps=reps)
    return row


def _big_pages(timer, kv: RandomKV, pb, p: int, splits: list[int], floor: float,
               reps: int) -> dict:
    """The per-page descriptor kernel over :data:`BIG_PAGE`-token pages of a shuffled table
    (``pb``'s queries and lengths; a cache of its own), checked against the shipped kernel
    over the same tokens as 16-token pages."""
    b, hq, d = pb.q.shape
    hkv, npp = pb.k.shape[2], -(-p // BIG_PAGE)
    k, v = kv.cache(b * npp, hkv, d, page=BIG_PAGE)
    dev = pb.q.device
    table = torch.randperm(b * npp, device=dev).to(torch.int32).view(b, npp).contiguous()
    sub = BIG_PAGE // 16
    small = (sub * table[:, :, None] + torch.arange(sub, device=dev, dtype=torch.int32)
             ).view(b, npp * sub).contiguous()
    cands = {f"{pg}pw{w}s{st}/{sp}": partial(paged_decode_desc, pb.q, k, v, table, pb.lens, p,
                                             num_splits=sp, pages_per_tile=pg, num_warps=w,
                                             num_stages=st)
             for pg, w, st in BIG_PAGE_TILES for sp in splits}
    name, us, failed = _best(timer, cands, reps)
    row = {"page64_us": us, "page64_tile": name, "page64_failed": failed}
    if name:
        ref = paged_decode_attention(pb.q, k.view(-1, 16, hkv, d), v.view(-1, 16, hkv, d),
                                     small, pb.lens)[0].float()
        row["page64_err"] = float((cands[name]()[0].float() - ref).abs().max())
        row["page64_pct_floor"] = 100 * floor / us
    return row


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--cascade", default=CASCADE)
    ap.add_argument("--paged", default=PAGED)
    ap.add_argument("--budget-s", type=float, default=420.0)
    ap.add_argument("--reps", type=int, default=30)
    args = ap.parse_args(argv)
    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    timer, kv = (Timer(dev) if dev.type == "cuda" else CpuTimer()), RandomKV(dev)
    bw = measure_bandwidth(timer, dev)["floor_TBs"]
    args.out.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    log = CsvLog(args.out / "cascade.csv", CASCADE_FIELDS)
    for g, b, p, s, _ in (parse_shapes(args.cascade) if args.cascade != "none" else []):
        if time.time() - t0 > args.budget_s / 2:
            print("cascade: half the budget spent, moving on", flush=True)
            break
        log.add(**cascade_row(timer, kv, g, b, p, s, bw, args.reps))
    log = CsvLog(args.out / "paged.csv", PAGED_FIELDS)
    for g, b, p, _, _ in parse_shapes(args.paged):
        if time.time() - t0 > args.budget_s:
            print("paged: budget spent", flush=True)
            break
        log.add(**paged_row(timer, kv, g, b, p, bw, args.reps))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
