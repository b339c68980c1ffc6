"""Tile sweep of the shared-prefix ("cascade") kernel at issue 18's target shapes, one command:

    python -m parrotsim.kernels.bench_cascade_tiles --out DIR [--shapes SPEC] [--reps 10]
        [--budget-s 150]

At G >= 4 the cascade's prefix phase is a product of B*G query rows by P prefix keys per KV head
(4 * B * Hq * P * D FLOPs, the same at every G), so its time follows the prefix tiles' FLOP rate
rather than the bytes (kernels/NOTES.md, session 7). This sweep times the default mode of each
shape against modes "concurrent" and "separate" at every prefix tiling of a small grid: rows per
tile BM in {64, 128}, keys per tile BN in {64, 128}, pipeline stages in {2, 3, 4} and the prefix
cut into {default, 384, 768, 1536}-token splits. Nothing else changes: the suffix phase keeps its
defaults. Each row: the shape, the variant, microseconds (CUDA-graph replays, L2 flushed, median
of ``reps``), its share of the bytes floor, the prefix TFLOP/s, the speedup over the paged kernel
over the shared pages, and its max |difference| from the default's output. Writes
``tiles.csv`` and the best variant per shape to ``best.txt``. Off the GPU it runs one tiny
shape under the Triton interpreter (a check of the driver only).
"""

from __future__ import annotations

import argparse
import itertools
import time
from functools import partial
from pathlib import Path

import torch

from parrotsim.kernels.bench_cases import shared_batch, tok_bytes
from parrotsim.kernels.bench_shapes import parse_shapes, suffixes
from parrotsim.kernels.bench_util import CpuTimer, CsvLog, RandomKV, Timer, measure_bandwidth
from parrotsim.kernels.paged_decode import paged_decode_attention
from parrotsim.kernels.shared_prefix_decode import shared_prefix_decode_attention

SHAPES = "4,8x64x6000x256;4,8x32x6000x256;1x64x6000x256"
FIELDS = ["G", "B", "P", "S", "variant", "mode", "block_m", "block_n", "stages", "split_tokens",
          "us", "pct_floor", "prefix_tflops", "speedup_vs_paged_shared", "err", "error"]
GRID = {"mode": ("concurrent", "separate"), "block_m": (64, 128), "block_n": (64, 128),
        "stages": (2, 3, 4), "split_tokens": (None, 384, 768, 1536)}
#: the interpreter's check of the driver: two tilings of a tiny shape
CPU_GRID = {"mode": ("separate",), "block_m": (16,), "block_n": (16,), "stages": (2,),
            "split_tokens": (None, 16)}


def variants(grid: dict) -> list[dict]:
    """Every tiling of ``grid`` (96 for :data:`GRID`), each a dict of its knobs."""
    keys = list(grid)
    return [dict(zip(keys, vals, strict=True)) for vals in itertools.product(*grid.values())]


def sweep_shape(timer, kv: RandomKV, shape: tuple, bw: float, reps: int, hq: int, d: int,
                log: CsvLog, deadline: float, grid: dict) -> list[dict]:
    """Rows of one shape: the paged kernel over shared pages, the default mode, every tiling."""
    g, b, p, s, ragged = shape
    suf = suffixes(b, s, ragged, seed=hash(shape) & 0xFFFF)
    floor_us = ((p + sum(suf)) * tok_bytes(hq // g, d) + 2 * b * hq * d * 2) / bw / 1e6
    gflop = 4 * b * hq * p * d / 1e9
    sb = shared_batch(kv, p, suf, hq, g, d)
    paged_us = timer(partial(paged_decode_attention, sb.q, sb.k, sb.v, *sb.paged_tables()),
                     reps=reps)
    run = partial(shared_prefix_decode_attention, *sb.args())
    ref = run()[0]
    base = {"G": g, "B": b, "P": p, "S": s}
    rows = [{**base, "variant": "paged_shared", "us": paged_us}]
    todo = [("default", {}, {})] + [
        ("tiled", v, {"mode": v["mode"], "prefix_block_m": v["block_m"],
                      "prefix_block_n": v["block_n"], "num_stages": v["stages"],
                      "prefix_split_tokens": v["split_tokens"]}) for v in variants(grid)]
    for name, knobs, kw in todo:
        if time.time() > deadline:
            break
        row = {**base, "variant": name, **knobs}
        try:
            us = timer(partial(run, **kw), reps=reps)
            row.update(us=us, pct_floor=100 * floor_us / us, prefix_tflops=gflop / us * 1e3,
                       speedup_vs_paged_shared=paged_us / us,
                       err=float((run(**kw)[0].float() - ref.float()).abs().max()))
        except Exception as e:  # noqa: BLE001 - a tiling over the shared memory: keep the rest
            row["error"] = f"{type(e).__name__}: {e}"[:160]
            if torch.cuda.is_available():
                torch.cuda.empty_cache()
        rows.append(row)
    for row in rows:
        log.add(**row)
    return rows


def best_lines(rows: list[dict]) -> list[str]:
    """Per shape: the default, the best tiling, and the paged kernel over the shared pages."""
    out = []
    for key in dict.fromkeys((r["G"], r["B"], r["P"], r["S"]) for r in rows):
        mine = [r for r in rows if (r["G"], r["B"], r["P"], r["S"]) == key and "us" in r]
        paged = next(r["us"] for r in mine if r["variant"] == "paged_shared")
        tried = [r for r in mine if r["variant"] != "paged_shared"]
        default = next((r for r in tried if r["variant"] == "default"), None)
        best = min(tried, key=lambda r: r["us"]) if tried else None
        if default is None or best is None:
            continue
        knobs = ", ".join(f"{k}={best.get(k)}" for k in GRID if k in best)
        out.append(f"G={key[0]} B={key[1]} P={key[2]} S={key[3]}: paged over shared pages "
                   f"{paged:.1f} us; default {default['us']:.1f} us "
                   f"({default['pct_floor']:.1f} % of floor, {paged / default['us']:.2f}x); "
                   f"best {best['us']:.1f} us ({best['pct_floor']:.1f} %, "
                   f"{paged / best['us']:.2f}x, {best['prefix_tflops']:.0f} TFLOP/s) {knobs}")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--shapes", default=SHAPES)
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--budget-s", type=float, default=150.0, help="no new timing after it")
    args = ap.parse_args(argv)
    try:
        shapes = parse_shapes(args.shapes)
    except ValueError as e:
        ap.error(str(e))
    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    gpu = dev.type == "cuda"
    grid = GRID if gpu else CPU_GRID
    if not gpu:
        shapes = parse_shapes("4x2x40x17")
    hq, d = (32, 128) if gpu else (8, 32)
    args.out.mkdir(parents=True, exist_ok=True)
    t0, timer = time.time(), Timer(dev) if gpu else CpuTimer()
    torch.manual_seed(0)
    bw = measure_bandwidth(timer, dev)["floor_TBs"]
    log, rows, kv = CsvLog(args.out / "tiles.csv", FIELDS), [], RandomKV(dev)
    for shape in shapes:
        rows += sweep_shape(timer, kv, shape, bw, args.reps, hq, d, log, t0 + args.budget_s,
                            grid)
    text = "\n".join([f"bench_cascade_tiles, floor at {bw:.3f} TB/s, {time.time() - t0:.0f} s",
                      *best_lines(rows)]) + "\n"
    (args.out / "best.txt").write_text(text)
    print(text, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
