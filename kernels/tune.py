"""Build the GPU's decode-attention tuning table (:mod:`parrotsim.kernels.tuning_table`):

    python -m parrotsim.kernels.tune --out calibrate/profiles/h200_kernels.csv [--budget-s 150]

Paged kernel, per (G, batch, context) of :data:`PAGED_GRID`: the splits sweep with the default
64 x 4 x 3 tile ({1, 2, 4, the wave-filling count, twice it, the heuristic's, the wave model's +-1}, each split >= 128
tokens), then three other tiles at the best split count; the fastest wins. Shared prefix, per
(G, batch, prefix, suffix) of :data:`SHARED_GRID`: the paged kernel over the shared pages (with
the paged choice just tuned) against cascade modes fused / concurrent / concurrent with twice
the prefix splits / concurrent with 64-row prefix tiles (B*G > 64) / concurrent with each suffix
tile of :data:`SUFFIX_TILES`; "paged" wins where it is fastest.
Heads: Hq = 32, D = 128 (LLaMA-7B; G = 4, 8 as LLaMA-3-8B / 70B-style GQA). CUDA-graph
replays with the L2 flushed, median of ``--reps``. Points run coarse grid first and stop at
``--budget-s`` (the table is rewritten after every point, so a cut run leaves a usable table).
"""

from __future__ import annotations

import argparse
import time
from functools import partial
from pathlib import Path

import torch

from parrotsim.kernels._common import num_sms
from parrotsim.kernels.bench_cases import private_batch, shared_batch
from parrotsim.kernels.bench_util import CpuTimer, RandomKV, Timer
from parrotsim.kernels.paged_decode import (
    choose_num_splits,
    paged_decode_attention,
    wave_splits,
)
from parrotsim.kernels.shared_prefix_decode import (
    paged_over_shared_pages,
    prefix_tiles,
    shared_prefix_decode_attention,
)
from parrotsim.kernels.tuning_table import PAGED_DEFAULT, KernelTable, write_table

GROUPS = (1, 4, 8)
# (batches, contexts), each in coarse-first order; points with batch x context > 2^21 skipped
# (batches 1 / 7 / 48 / 100 / 200 of issue 18's shapes each have a point within a factor 1.5, and
# contexts 500 / 3000 / 12000 within 1.5: on the sparser grid a row transferred to a shape twice
# its size chose up to 24 % slower than the heuristic, on this one up to 15 %,
# kernels/results/session13 and session14)
PAGED_GRID = ((1, 64, 256, 16, 4, 8, 32, 128), (2048, 8192, 512, 16384, 4096))
# (batches, prefixes, suffixes); batch 1 and a 512-token prefix give rows where the paged kernel
# over the shared pages wins (a prefix that ends inside a page cannot take that choice, session14)
SHARED_GRID = ((64, 4, 256, 16, 1), (6144, 1024, 512), (256, 16))
TILES = [(128, 4, 2), (128, 8, 3), (64, 4, 4)]
#: suffix tiles (tokens, warps, stages) tried for mode "concurrent" beside its default: small
#: tiles leave room on an SM beside a prefix program (kernels/results/session12)
SUFFIX_TILES = [(64, 2, 3), (32, 2, 4), (32, 4, 3)]
NO_TILE = (0, 0, 0)  # the mode's default suffix tile
TINY = {"paged": ((2,), (160,)), "shared": ((3,), (64,), (16,)), "groups": (1, 4),
        "hq": 8, "d": 32}


def paged_points(batches, contexts, groups=GROUPS, max_tokens: int = 1 << 21) -> list[tuple]:
    """(G, batch, context) points, context outermost, G innermost."""
    return [(g, b, c) for c in contexts for b in batches for g in groups if b * c <= max_tokens]


def shared_points(batches, prefixes, suffixes, groups=GROUPS) -> list[tuple]:
    """(G, batch, prefix, suffix) points, prefix outermost, G innermost."""
    return [(g, b, p, s) for p in prefixes for s in suffixes for b in batches for g in groups]


def split_candidates(programs: int, ctx: int, dev: torch.device) -> list[int]:
    """Split counts to try: 1, 2, 4, the count filling 2 waves of SMs, twice it, the
    heuristic's and the wave model's (:func:`~parrotsim.kernels.paged_decode.wave_splits`) with
    its two neighbours; each split at least 128 tokens, at most 64 splits."""
    fill = -(-2 * num_sms(dev) // programs)
    cap = max(1, min(64, ctx // 128))
    wave = wave_splits(programs, ctx, num_sms(dev))
    want = {1, 2, 4, fill, 2 * fill, choose_num_splits(programs, ctx, dev), wave - 1, wave,
            wave + 1}
    return sorted({min(max(s, 1), cap) for s in want})


def _best(timer, cands: dict, reps: int) -> dict:
    """Time every candidate (name -> fn); failed ones (too much shared memory, ...) are left out."""
    res = {}
    for name, fn in cands.items():
        try:
            res[name] = timer(fn, reps=reps)
        except Exception as e:  # noqa: BLE001 - one tile that does not fit must not stop the run
            print(f"  candidate {name} failed: {type(e).__name__}: {str(e)[:100]}", flush=True)
    return res


def tune_paged(timer, kv: RandomKV, g: int, b: int, ctx: int, hq: int, d: int, reps: int
               ) -> dict:
    """Fastest (splits, tile) for B sequences of ``ctx`` tokens at group size G."""
    pb = private_batch(kv, [ctx] * b, hq, g, d)
    run = partial(paged_decode_attention, pb.q, pb.k, pb.v, pb.tables, pb.lens)
    heur = choose_num_splits(b * hq // g, ctx, kv.device)
    cands = {(s, *PAGED_DEFAULT): partial(run, num_splits=s, block_n=PAGED_DEFAULT[0],
                                          num_warps=PAGED_DEFAULT[1], num_stages=PAGED_DEFAULT[2])
             for s in split_candidates(b * hq // g, ctx, kv.device)}
    res = _best(timer, cands, reps)
    s_best = min(res, key=res.get)[0]
    more = {(s_best, *t): partial(run, num_splits=s_best, block_n=t[0], num_warps=t[1],
                                  num_stages=t[2]) for t in TILES}
    res.update(_best(timer, more, reps))
    best = min(res, key=res.get)
    return {"kernel": "paged", "G": g, "batch": b, "context": ctx, "suffix": 0,
            "splits": best[0], "block_n": best[1], "warps": best[2], "stages": best[3],
            "us": round(res[best], 2),
            "fallback_us": round(res.get((heur, *PAGED_DEFAULT), float("nan")), 2),
            "candidates": len(res)}


def tune_shared(timer, kv: RandomKV, table: KernelTable, g: int, b: int, p: int, s: int,
                hq: int, d: int, reps: int) -> dict:
    """Fastest way to run a shared-prefix batch: paged over shared pages or a cascade mode."""
    sb = shared_batch(kv, p, [s] * b, hq, g, d)
    pc = table.paged(g, b, p + s)
    paged = partial(paged_over_shared_pages, *sb.args())
    if pc is not None:
        paged = partial(paged_decode_attention, sb.q, sb.k, sb.v, *sb.paged_tables(),
                        num_splits=pc.splits, block_n=pc.block_n, num_warps=pc.warps,
                        num_stages=pc.stages)
    casc = partial(shared_prefix_decode_attention, *sb.args())
    nsp = 2 * prefix_tiles(b, g, p, hq // g, kv.device, at_most_one_wave=True)[4]
    cands = {("paged", 0, 0, NO_TILE): paged,
             ("fused", 0, 0, NO_TILE): partial(casc, mode="fused"),
             ("concurrent", 0, 0, NO_TILE): partial(casc, mode="concurrent"),
             ("concurrent", nsp, 0, NO_TILE): partial(casc, mode="concurrent",
                                                      prefix_split_tokens=-(-p // nsp))}
    if b * g > 64:
        cands[("concurrent", 0, 64, NO_TILE)] = partial(casc, mode="concurrent",
                                                        prefix_block_m=64)
    for bn, warps, stages in SUFFIX_TILES:
        cands[("concurrent", 0, 0, (bn, warps, stages))] = partial(
            casc, mode="concurrent", suffix_block_n=bn, suffix_warps=warps,
            suffix_stages=stages)
    res = _best(timer, cands, reps)
    best = min(res, key=res.get)
    heur = "paged" if b == 1 else "fused" if b * g <= 32 else "concurrent"
    tile = dict(zip(("block_n", "warps", "stages"), best[3], strict=True))  # 0s: default
    return {"kernel": "shared", "G": g, "batch": b, "context": p, "suffix": s, "splits": 0,
            "mode": best[0], "prefix_splits": best[1], "prefix_bm": best[2], **tile,
            "us": round(res[best], 2),
            "fallback_us": round(res.get((heur, 0, 0, NO_TILE), float("nan")), 2),
            "candidates": len(res)}


def run(out: Path, timer, dev: torch.device, budget_s: float, tiny: bool = False,
        reps: int = 10) -> dict:
    """Tune the paged grid, then the shared grid, within ``budget_s``; returns counts."""
    t0 = time.time()
    hq, d = (TINY["hq"], TINY["d"]) if tiny else (32, 128)
    groups = TINY["groups"] if tiny else GROUPS
    pp = paged_points(*(TINY["paged"] if tiny else PAGED_GRID), groups)
    sp = shared_points(*(TINY["shared"] if tiny else SHARED_GRID), groups)
    kv, rows = RandomKV(dev), []
    done = {"paged": 0, "shared": 0, "paged_planned": len(pp), "shared_planned": len(sp)}
    for kind, points in (("paged", pp), ("shared", sp)):
        for pt in points:
            if time.time() - t0 > budget_s:
                print(f"tune: budget {budget_s:.0f}s reached in {kind}", flush=True)
                break
            if kind == "paged":
                row = tune_paged(timer, kv, *pt, hq, d, reps)
            else:
                row = tune_shared(timer, kv, KernelTable(rows), *pt, hq, d, reps)
            rows.append(row)
            done[kind] += 1
            write_table(out, rows)
            print(f"[tune {time.time() - t0:5.1f}s] " + ", ".join(
                f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in row.items()),
                flush=True)
    write_table(out, rows)
    return done


def main() -> None:
    """Command line: ``--out FILE [--budget-s S] [--reps N] [--tiny]``."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--budget-s", type=float, default=150.0)
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--tiny", action="store_true", help="tiny grid (CPU interpreter check)")
    args = ap.parse_args()
    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    timer = Timer(dev) if dev.type == "cuda" else CpuTimer()
    torch.manual_seed(0)
    print(run(args.out, timer, dev, args.budget_s, args.tiny or dev.type != "cuda", args.reps))


if __name__ == "__main__":
    main()
