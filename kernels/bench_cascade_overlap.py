"""Can the cascade's two phases overlap? Suffix tiles and launch order at issue 18's targets.

    python -m parrotsim.kernels.bench_cascade_overlap --out DIR [--shapes SPEC] [--reps 30]
                                                      [--budget-s 300] [--grid default|fine|confirm]

Session 11 (``kernels/results/session11``) took the cascade's prefix phase from 36.8 to 22.4 us
at G=4, B=64, P=6000, S=256 by reading the prefix with descriptor copies
(:mod:`parrotsim.kernels.experimental.prefix_desc`), yet the whole kernel only went from 57.3
to 54.0 us: the suffix phase alone takes ~29.6 us and the two phases, on two CUDA streams, ran
nearly one after the other. Two things decide whether they can share the GPU, and this measures
both (Hq = 32, D = 128; CUDA-graph replays, L2 flushed, median of ``reps``):

* the suffix tile: mode "concurrent" reads 128 suffix tokens a tile over 2 stages (~128 KB of
  shared memory a program), which leaves no room on an SM beside a descriptor prefix program
  (~112 KB at BM 64, BN 64, 3 stages); smaller tiles do;
* the launch order: the kernel launched first (on the side stream) takes the SMs first.

Per shape (default: G 4/8 x B 64 x P 6000 x S 256, then G 4/8 x B 32 and G 4/8 x B 64 at P 3000
and 12000):

* ``suffix.csv``: the suffix launch alone (partial states into slots, as inside the cascade) at
  every tile of :data:`SUFFIX_TILES` (tokens a tile, warps, stages) x 1 and 2 splits;
* ``cascade.csv``: the shipped kernel (mode "auto", and mode "concurrent" with each suffix tile
  below) and the descriptor cascade at each prefix tile of :data:`PREFIX_TILES` x three prefix
  split counts x the shipped suffix tile and the 3 fastest of ``suffix.csv`` x both launch
  orders; each with its % of the bytes floor, x over the paged kernel over the shared pages and
  max |difference| from the shipped kernel's output (``err``).

Prints the best variant per shape, then a markdown summary (``--summary`` prints it again from
the CSVs of ``--out``). Off the GPU it runs under Triton's interpreter with
wall-clock timings (a check of the driver, not a measurement).
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import torch

from parrotsim.kernels._common import default_scale, num_sms
from parrotsim.kernels.bench_cases import shared_batch, tok_bytes
from parrotsim.kernels.bench_shapes import parse_shapes, suffixes
from parrotsim.kernels.bench_util import CpuTimer, CsvLog, RandomKV, Timer, measure_bandwidth
from parrotsim.kernels.experimental.prefix_desc import shared_prefix_contiguous
from parrotsim.kernels.paged_decode import launch_decode, paged_decode_attention
from parrotsim.kernels.shared_prefix_decode import shared_prefix_decode_attention

HQ, D = 32, 128
SHAPES = "4,8x64x6000x256;4,8x32x6000x256;4,8x64x3000,12000x256"
#: (tokens a tile, warps, stages) of the suffix phase; (128, 4, 2) is mode "concurrent"'s
SUFFIX_TILES = [(32, 2, 3), (32, 4, 3), (64, 2, 2), (64, 2, 3), (64, 4, 2), (64, 4, 3),
                (64, 4, 4), (128, 4, 2), (128, 4, 3), (128, 8, 2)]
SHIPPED_SUFFIX = (128, 4, 2)
#: (BM, BN, warps, stages) of the descriptor prefix phase: session 11's best at B=64 and B=32
PREFIX_TILES = [(64, 64, 4, 3), (64, 128, 4, 3)]
SUFFIX_FIELDS = ["G", "B", "P", "S", "tile", "splits", "us", "error"]


@dataclass(frozen=True)
class Grid:
    """What one run sweeps. The default: every suffix tile alone, then the cascade with the
    shipped suffix tile and the 3 fastest alone, prefix split counts of half, one and two
    waves, both launch orders. ``fine``: around session 12's first run's best (the descriptor
    prefix 64x64x4x3 at G=4/8, B=64): fewer suffix tiles, each with 1, 2 and 4 splits in the
    cascade, explicit prefix split counts, prefix-first only. ``confirm``: the best of both
    runs again on more shapes, each shape twice (``--grid``)."""

    suffix_tiles: tuple[tuple[int, int, int], ...] = tuple(SUFFIX_TILES)
    suffix_splits: tuple[int, ...] = (1, 2)
    top: int | None = 3  # None: every suffix tile x split goes into the cascade
    prefix_tiles: tuple[tuple[int, int, int, int], ...] = tuple(PREFIX_TILES)
    prefix_splits: tuple[int, ...] | None = None  # None: half, one and two waves
    orders: tuple[bool, ...] = (False, True)  # suffix first?


FINE = Grid(suffix_tiles=((32, 2, 2), (32, 2, 3), (32, 2, 4), (32, 4, 3), (64, 2, 3),
                          (64, 4, 3)),
            suffix_splits=(1, 2, 4), top=None, prefix_tiles=((64, 64, 4, 3), (64, 64, 4, 4)),
            prefix_splits=(2, 3, 4, 5, 6), orders=(False,))
#: the first two runs' best of each kind again, on more shapes, each shape twice in the run
CONFIRM = Grid(suffix_tiles=((64, 2, 2), (64, 2, 3), (64, 2, 4), (32, 2, 4), (64, 4, 3)),
               suffix_splits=(1,), top=None, prefix_tiles=((64, 64, 4, 3), (64, 64, 4, 4)),
               prefix_splits=(3, 4), orders=(False,))
GRIDS = {"default": (Grid(), SHAPES), "fine": (FINE, "4,8x64x6000x256"),
         "confirm": (CONFIRM, "4,8x64x6000x256;4,8x32x6000x256;4x64x3000,12000x256;"
                              "4,8x64x6000x256")}
CASCADE_FIELDS = ["G", "B", "P", "S", "floor_us", "paged_shared_us", "variant", "prefix_tile",
                  "prefix_splits", "suffix_tile", "suffix_splits", "order", "us", "pct_floor",
                  "x_vs_paged_shared", "err", "error"]


def _tile_name(tile: tuple[int, ...]) -> str:
    return "x".join(str(t) for t in tile)


def suffix_alone(sb, tile: tuple[int, int, int], splits: int):
    """The suffix phase's launch as the cascade makes it, its slot buffers made once."""
    b, hq, d = sb.q.shape
    po = torch.empty(b, hq, splits, d, dtype=torch.float32, device=sb.q.device)
    plse = torch.empty(b, hq, splits, dtype=torch.float32, device=sb.q.device)
    bn, warps, stages = tile
    return partial(launch_decode, sb.q, sb.k, sb.v, sb.suffix_tables, sb.suffix_lens,
                   default_scale(d, None), splits, None, None, po, plse, slot0=0,
                   block_n=bn, num_warps=warps, num_stages=stages)


def _timed(timer, fn, reps: int) -> tuple[float, str]:
    try:
        return timer(fn, reps=reps), ""
    except Exception as e:  # noqa: BLE001 - a tile over the shared-memory limit
        return float("nan"), f"{type(e).__name__}: {str(e)[:100]}"


def run_shape(timer, kv: RandomKV, g: int, b: int, p: int, s: int, bw: float, reps: int,
              suffix_log: CsvLog, cascade_log: CsvLog, grid: Grid = Grid()) -> dict:
    """Every row of one shape; returns its best cascade row."""
    sb = shared_batch(kv, p, suffixes(b, s, False, seed=1), HQ, g, D)
    hkv = HQ // g
    shape = {"G": g, "B": b, "P": p, "S": s}
    floor = ((p + b * s) * tok_bytes(hkv, D) + 2 * b * HQ * D * 2) / bw / 1e6
    paged = timer(partial(paged_decode_attention, sb.q, sb.k, sb.v, *sb.paged_tables()),
                  reps=reps)
    suffix_rows = []
    for tile in grid.suffix_tiles:
        for splits in grid.suffix_splits:
            us, err = _timed(timer, suffix_alone(sb, tile, splits), reps)
            row = {**shape, "tile": _tile_name(tile), "splits": splits, "us": us, "error": err}
            suffix_log.add(**row)
            if not err:
                suffix_rows.append((us, tile, splits))
    suffix_rows.sort()
    picks = [(SHIPPED_SUFFIX, None)] + [(t, n) for _, t, n in suffix_rows[:grid.top]
                                          if (t, n) != (SHIPPED_SUFFIX, None)]
    ref = shared_prefix_decode_attention(*sb.args())[0].float()
    best: dict = {}

    def add(variant: str, fn, **cols) -> None:
        nonlocal best
        us, error = _timed(timer, fn, reps)
        err = float("nan") if error else float((fn()[0].float() - ref).abs().max())
        row = {**shape, "floor_us": floor, "paged_shared_us": paged, "variant": variant,
               "us": us, "pct_floor": 100 * floor / us, "x_vs_paged_shared": paged / us,
               "err": err, "error": error, **cols}
        cascade_log.add(**row)
        if not error and (not best or us < best["us"]):
            best = row

    add("shipped_auto", partial(shared_prefix_decode_attention, *sb.args()))
    for tile, splits in picks:
        bn, warps, stages = tile
        add("shipped_concurrent", partial(
            shared_prefix_decode_attention, *sb.args(), mode="concurrent", suffix_block_n=bn,
            suffix_warps=warps, suffix_stages=stages, suffix_splits=splits),
            suffix_tile=_tile_name(tile), suffix_splits=splits or "", order="prefix_first")
    args = (sb.q, sb.k, sb.v, 0, p, sb.suffix_tables, sb.suffix_lens)
    sms = num_sms(sb.q.device)
    for bm, bn, warps, stages in grid.prefix_tiles:
        one_wave = max(1, sms // (-(-(b * g) // bm) * hkv))
        for prefix_splits in (grid.prefix_splits
                              or sorted({max(1, one_wave // 2), one_wave, 2 * one_wave})):
            for tile, splits in picks:
                for suffix_first in grid.orders:
                    add("desc", partial(
                        shared_prefix_contiguous, *args, block_m=bm, block_n=bn,
                        num_warps=warps, num_stages=stages, prefix_splits=prefix_splits,
                        suffix_splits=splits, suffix_tile=tile, suffix_first=suffix_first),
                        prefix_tile=_tile_name((bm, bn, warps, stages)),
                        prefix_splits=prefix_splits, suffix_tile=_tile_name(tile),
                        suffix_splits=splits or "",
                        order="suffix_first" if suffix_first else "prefix_first")
    return best


def summary(out: Path) -> str:
    """A markdown table of ``out``'s two CSVs, one line per shape: the suffix phase alone (the
    shipped tile and the best), the shipped kernel (mode "auto"; mode "concurrent" with its
    best suffix tile) and the descriptor cascade's best, prefix-first and suffix-first."""
    import pandas as pd  # the summary only: the sweep itself needs torch alone

    suffix = pd.read_csv(out / "suffix.csv")
    cascade = pd.read_csv(out / "cascade.csv")
    cascade = cascade[cascade["error"].isna()]
    lines = ["| G | B | P | floor us | suffix alone: shipped tile / best (tile) | shipped auto "
             "| shipped concurrent, best suffix tile | desc, prefix first | desc, suffix first |",
             "|---|---|---|---|---|---|---|---|---|"]

    def cell(rows: pd.DataFrame, tile: bool = True) -> str:
        if rows.empty:
            return "-"
        r = rows.loc[rows["us"].idxmin()]
        what = f" ({r['prefix_tile']}/{int(r['prefix_splits'])}, {r['suffix_tile']})" if tile \
            and isinstance(r["prefix_tile"], str) else \
            f" ({r['suffix_tile']})" if tile and isinstance(r["suffix_tile"], str) else ""
        return (f"{r['us']:.1f} us, {r['pct_floor']:.1f} %, "
                f"{r['x_vs_paged_shared']:.2f}x{what}")

    for (g, b, p), rows in cascade.groupby(["G", "B", "P"], sort=False):
        sfx = suffix[(suffix["G"] == g) & (suffix["B"] == b) & (suffix["P"] == p)
                     & suffix["error"].isna()]
        shipped = sfx[(sfx["tile"] == _tile_name(SHIPPED_SUFFIX)) & (sfx["splits"] == 1)]
        best = sfx.loc[sfx["us"].idxmin()] if not sfx.empty else None
        alone = ("-" if best is None else
                 f"{shipped['us'].min():.1f} / {best['us']:.1f} ({best['tile']}, "
                 f"{int(best['splits'])} split{'s' if best['splits'] > 1 else ''})")
        desc = rows[rows["variant"] == "desc"]
        lines.append(
            f"| {g} | {b} | {p} | {rows['floor_us'].iloc[0]:.1f} | {alone} | "
            f"{cell(rows[rows['variant'] == 'shipped_auto'], tile=False)} | "
            f"{cell(rows[rows['variant'] == 'shipped_concurrent'])} | "
            f"{cell(desc[desc['order'] == 'prefix_first'])} | "
            f"{cell(desc[desc['order'] == 'suffix_first'])} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--shapes", default=None,
                    help=f"G x B x P x S groups (bench_shapes; default {SHAPES})")
    ap.add_argument("--budget-s", type=float, default=300.0,
                    help="no new shape after this many seconds")
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--grid", choices=sorted(GRIDS), default="default",
                    help="what to sweep (Grid's docstring), each with its default shapes")
    ap.add_argument("--summary", action="store_true",
                    help="only print the markdown summary of the CSVs already in --out")
    args = ap.parse_args(argv)
    if args.summary:
        print(summary(args.out))
        return 0
    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    timer, kv = (Timer(dev) if dev.type == "cuda" else CpuTimer()), RandomKV(dev)
    bw = measure_bandwidth(timer, dev)["floor_TBs"]
    args.out.mkdir(parents=True, exist_ok=True)
    suffix_log = CsvLog(args.out / "suffix.csv", SUFFIX_FIELDS)
    cascade_log = CsvLog(args.out / "cascade.csv", CASCADE_FIELDS)
    t0 = time.time()
    grid, shapes = GRIDS[args.grid]
    for g, b, p, s, _ in parse_shapes(args.shapes or shapes):
        if time.time() - t0 > args.budget_s:
            print("budget spent: no more shapes", flush=True)
            break
        best = run_shape(timer, kv, g, b, p, s, bw, args.reps, suffix_log, cascade_log, grid)
        if best:
            print(f"best G={g} B={b} P={p} S={s}: {best['variant']} "
                  f"{best.get('prefix_tile', '')}/{best.get('prefix_splits', '')} suffix "
                  f"{best.get('suffix_tile', 'default')} {best.get('order', '')}: "
                  f"{best['us']:.1f} us, {best['pct_floor']:.1f} % of floor, "
                  f"{best['x_vs_paged_shared']:.2f}x", flush=True)
    try:
        print(summary(args.out))
    except ImportError:  # no pandas on the GPU image: --summary later
        pass
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
