"""Decode kernels against the bytes floor at GQA shapes (issue 18 item 4), one device command:

    python -m parrotsim.kernels.bench_gqa --out DIR [--cascade SPEC] [--paged SPEC]
        [--reps 10] [--budget-s 190]

SPEC as ``--shapes`` of :mod:`parrotsim.kernels.bench_shapes` (``"GxBxPxS[r];..."``, comma lists
multiply; Hq = 32, D = 128). CUDA-graph replays, L2 flushed before each, median of ``reps``
(:class:`parrotsim.kernels.bench_util.Timer`). Writes, under DIR:

* ``launch.csv``: the launch floor of this timing method: a graph of one empty kernel, of two,
  and the Triton streaming-read kernel over 1 MB - 1 GB (what a pure read of N bytes costs);
* ``cascade.csv`` (default: G 1/4/8 x B 32/64/100 x (P, S) in (6000, 256), (3000, 17),
  (12000, 1000)): the paged kernel over the shared pages, the cascade with its heuristic mode
  (fused if B*G <= 32 else concurrent), "fused", and the one-launch "fused_last" at six
  prefix tilings (split rule of "fused" / one wave; BN 128; BM 64 with 4 warps, so that suffix
  programs fit beside prefix programs on an SM, with 2 / 3 stages / one wave) and with the
  unmasked prefix tiles (``fast_prefix``) at the default and the BM 64 one-wave tiling, each
  against the bytes floor (prefix once + suffixes + q/o at the run's streaming rate), the read of the
  same bytes, and the prefix phase's FLOPs (4 * B * Hq * P * D);
* ``paged.csv`` (default: issue 18's 81 shapes at B >= 32, i.e. B 48 / 100 / 200): the paged
  kernel (default splits, merge launch), the same splits merged by the last split
  (``merge="last"``), with ``merge="last"`` also ``wave_splits`` and ``fill4`` splits (four
  waves of programs, splits >= 128 tokens), and torch SDPA on the contiguous gather (uniform
  shapes);
* ``table.txt``: the printed summary. ``err_*`` columns: max |difference| of a variant's output
  from the default's at the same shape (bf16 outputs).
Off the GPU it runs tiny shapes under the Triton interpreter (a check of the driver only).
"""

from __future__ import annotations

import argparse
import csv
import statistics
import subprocess
import sys
import time
from functools import partial
from pathlib import Path

import torch
import triton

from parrotsim.kernels._common import num_sms
from parrotsim.kernels.bench_cases import private_batch, shared_batch, tok_bytes
from parrotsim.kernels.bench_shapes import _sdpa, parse_shapes, suffixes
from parrotsim.kernels.bench_util import (
    READ_MAX,
    CpuTimer,
    CsvLog,
    RandomKV,
    Reader,
    Timer,
    measure_bandwidth,
)
from parrotsim.kernels.paged_decode import choose_num_splits, paged_decode_attention, wave_splits
from parrotsim.kernels.prefix_tile import prefix_tiles
from parrotsim.kernels.shared_prefix_decode import shared_prefix_decode_attention

CASCADE_SPEC = ("1,4,8x32,64,100x6000x256;1,4,8x32,64,100x3000x17;"
                "1,4,8x32,64,100x12000x1000")
PAGED_SPEC = "1,4,8x48,100,200x500,3000,12000x0,17,1000"
CASCADE_SHARE = 0.58  # of --budget-s: the cascade part compiles ~55 kernels, the paged ~25
CASCADE_FIELDS = ["G", "B", "P", "S", "bw_TBs", "floor_us", "read_us", "prefix_gflop",
                  "paged_shared_us", "cascade_us", "cascade_mode", "fused_us", "fused_last_us",
                  "fused_last_1wave_us", "fused_last_bn128_us", "fused_last_bm64_us",
                  "fused_last_bm64_s3_us", "fused_last_bm64_1wave_us", "fused_last_fast_us",
                  "fused_last_bm64_1wave_fast_us",
                  "best", "best_us", "best_pct_floor", "best_tflops", "cascade_pct_floor",
                  "speedup_best_vs_paged_shared", "speedup_cascade_vs_paged_shared",
                  "err_fused_last", "error"]
PAGED_FIELDS = ["G", "B", "P", "S", "ragged", "bw_TBs", "floor_us", "read_us", "splits",
                "paged_us", "last_us", "wave_splits", "last_wave_us", "fill4_splits", "last_fill4_us",
                "sdpa_us",
                "paged_pct_floor", "best_last_pct_floor", "sdpa_pct_floor", "err_last", "error"]


@triton.jit
def _empty_kernel(x_ptr):
    pass


def launch_floor(timer, reader: Reader, log: CsvLog, reps: int) -> list[dict]:
    """Empty-kernel graphs of 1 and 2 launches, and reads of 1 MB .. 1 GB (1 kB .. 1 MB off
    the GPU); the rows logged."""
    x, rows = reader.out, []

    def two() -> None:
        _empty_kernel[(1,)](x)
        _empty_kernel[(1,)](x)

    for kind, fn in [("empty_1_launch", partial(_empty_kernel[(1,)], x)),
                     ("empty_2_launches", two),
                     ("empty_1_launch_1024_programs", partial(_empty_kernel[(1024,)], x))]:
        rows.append({"kind": kind, "bytes": 0, "us": timer(fn, reps=reps)})
    unit = 1e6 if reader.x.device.type == "cuda" else 1e3
    for mb in (1, 4, 16, 64, 256, 1024) if unit > 1e3 else (1, 64):
        op = reader.op(mb * unit)
        if op is not None:
            us = timer(op, reps=reps)
            rows.append({"kind": "read", "bytes": int(mb * unit), "us": us,
                         "TBs": mb * unit / us / 1e6})
    for row in rows:
        log.add(**row)
    return rows


def _diff(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a.float() - b.float()).abs().max())


def _try(row: dict, key: str, fn) -> None:
    """``row[key] = fn()``; a failure (e.g. a tile over the shared memory) leaves the column
    empty and is noted in ``row["error"]``, so the shape's other columns survive."""
    try:
        row[key] = fn()
    except Exception as e:  # noqa: BLE001
        row["error"] = (row.get("error", "") + f"{key}: {type(e).__name__}: {e}"[:120] + "; ")
        if torch.cuda.is_available():
            torch.cuda.empty_cache()


def cascade_shape(timer, kv: RandomKV, reader: Reader, shape: tuple, bw: float, reps: int,
                  hq: int, d: int) -> dict:
    """Every column of :data:`CASCADE_FIELDS` for one shared-prefix shape."""
    g, b, p, s, ragged = shape
    suf = suffixes(b, s, ragged, seed=hash(shape) & 0xFFFF)
    nbytes = (p + sum(suf)) * tok_bytes(hq // g, d) + 2 * b * hq * d * 2
    row = {"G": g, "B": b, "P": p, "S": s, "bw_TBs": bw, "floor_us": nbytes / bw / 1e6,
           "prefix_gflop": 4 * b * hq * p * d / 1e9}
    op = reader.op(nbytes)
    row["read_us"] = timer(op, reps=reps) if op is not None else ""
    sb = shared_batch(kv, p, suf, hq, g, d)
    row["paged_shared_us"] = timer(partial(paged_decode_attention, sb.q, sb.k, sb.v,
                                           *sb.paged_tables()), reps=reps)
    mode = "fused" if b * g <= 32 else "concurrent"
    row["cascade_mode"] = mode
    run = partial(shared_prefix_decode_attention, *sb.args())
    row["cascade_us"] = timer(partial(run, mode=mode), reps=reps)
    row["fused_us"] = timer(partial(run, mode="fused"), reps=reps)
    one_wave = prefix_tiles(b, g, p, hq // g, kv.device, at_most_one_wave=True)[3]
    one_wave64 = prefix_tiles(b, g, p, hq // g, kv.device, block_m=64, at_most_one_wave=True)[3]
    variants = {"fused_last": {}, "fused_last_1wave": {"prefix_split_tokens": one_wave},
                "fused_last_bn128": {"prefix_block_n": 128},
                "fused_last_bm64": {"prefix_block_m": 64},
                "fused_last_bm64_s3": {"prefix_block_m": 64, "num_stages": 3},
                "fused_last_bm64_1wave": {"prefix_block_m": 64,
                                          "prefix_split_tokens": one_wave64},
                "fused_last_fast": {"fast_prefix": True},
                "fused_last_bm64_1wave_fast": {"prefix_block_m": 64, "fast_prefix": True,
                                               "prefix_split_tokens": one_wave64}}
    ref = run(mode=mode)[0]
    errs = []
    for name, kw in variants.items():
        _try(row, f"{name}_us", lambda kw=kw: timer(partial(run, mode="fused_last", **kw),
                                                    reps=reps))
        _try(row, "err", lambda kw=kw: errs.append(_diff(run(mode="fused_last", **kw)[0], ref)))
    row.pop("err", None)
    row["err_fused_last"] = max(errs) if errs else ""
    best = min([k for k in ("cascade", "fused", *variants) if f"{k}_us" in row],
               key=lambda k: row[f"{k}_us"])
    row["best"], row["best_us"] = best, row[f"{best}_us"]
    row["best_pct_floor"] = 100 * row["floor_us"] / row["best_us"]
    row["best_tflops"] = row["prefix_gflop"] / row["best_us"] * 1e3
    row["cascade_pct_floor"] = 100 * row["floor_us"] / row["cascade_us"]
    row["speedup_best_vs_paged_shared"] = row["paged_shared_us"] / row["best_us"]
    row["speedup_cascade_vs_paged_shared"] = row["paged_shared_us"] / row["cascade_us"]
    return row


def paged_shape(timer, kv: RandomKV, reader: Reader, shape: tuple, bw: float, reps: int,
                hq: int, d: int) -> dict:
    """Every column of :data:`PAGED_FIELDS` for one private-pages shape (contexts P + S_b)."""
    g, b, p, s, ragged = shape
    lens = [p + x for x in suffixes(b, s, ragged, seed=hash(shape) & 0xFFFF)]
    nbytes = sum(lens) * tok_bytes(hq // g, d) + 2 * b * hq * d * 2
    row = {"G": g, "B": b, "P": p, "S": s, "ragged": int(ragged), "bw_TBs": bw,
           "floor_us": nbytes / bw / 1e6}
    op = reader.op(nbytes)
    row["read_us"] = timer(op, reps=reps) if op is not None else ""
    pb = private_batch(kv, lens, hq, g, d)
    width = pb.tables.shape[1] * 16
    splits = choose_num_splits(b * hq // g, width, kv.device)
    waves = wave_splits(b * hq // g, width, num_sms(kv.device))
    run = partial(paged_decode_attention, pb.q, pb.k, pb.v, pb.tables, pb.lens)
    fill4 = choose_num_splits(b * hq // g, width, kv.device, min_split_tokens=128, waves=4.0)
    row["splits"], row["wave_splits"], row["fill4_splits"] = splits, waves, fill4
    row["paged_us"] = timer(partial(run, num_splits=splits), reps=reps)
    done = {1: row["paged_us"]}  # one split: merge="last" runs the same direct kernel
    for key, n in (("last_us", splits), ("last_wave_us", waves), ("last_fill4_us", fill4)):
        if n not in done:
            _try(done, n, partial(timer, partial(run, num_splits=n, merge="last"), reps=reps))
        row[key] = done.get(n, "")
    _try(row, "err_last", lambda: _diff(run(num_splits=max(waves, fill4, 2), merge="last")[0],
                                        run(num_splits=splits)[0]))
    if "error" in done:
        row["error"] = done["error"]
    if not ragged:
        row["sdpa_us"] = timer(_sdpa(pb, lens, g), reps=reps)
        row["sdpa_pct_floor"] = 100 * row["floor_us"] / row["sdpa_us"]
    row["paged_pct_floor"] = 100 * row["floor_us"] / row["paged_us"]
    lasts = [row[k] for k in ("last_us", "last_wave_us", "last_fill4_us") if row[k] != ""]
    row["best_last_pct_floor"] = 100 * row["floor_us"] / min(lasts) if lasts else ""
    return row


def _sweep(name: str, fn, shapes: list, log: CsvLog, deadline: float, dev: torch.device,
           *args) -> list[dict]:
    rows = []
    for shape in shapes:
        if time.time() > deadline:
            print(f"{name}: budget reached after {len(rows)} of {len(shapes)} shapes", flush=True)
            break
        try:
            row = fn(*args[:3], shape, *args[3:])
        except Exception as e:  # noqa: BLE001 - one shape failing (memory) must not stop the sweep
            g, b, p, s, _ = shape
            row = {"G": g, "B": b, "P": p, "S": s, "error": f"{type(e).__name__}: {e}"[:200]}
            if dev.type == "cuda":
                torch.cuda.empty_cache()
        log.add(**row)
        rows.append(row)
    return rows


CASCADE_COLS = ["floor_us", "read_us", "paged_shared_us", "cascade_us", "fused_us",
                "fused_last_us", "fused_last_1wave_us", "fused_last_bn128_us",
                "fused_last_bm64_us", "fused_last_bm64_s3_us", "fused_last_bm64_1wave_us",
                "fused_last_fast_us", "fused_last_bm64_1wave_fast_us", "best", "best_pct_floor",
                "best_tflops", "speedup_best_vs_paged_shared", "cascade_pct_floor",
                "speedup_cascade_vs_paged_shared", "err_fused_last"]
PAGED_COLS = ["floor_us", "read_us", "splits", "paged_us", "last_us", "wave_splits",
              "last_wave_us", "fill4_splits", "last_fill4_us", "sdpa_us", "paged_pct_floor",
              "best_last_pct_floor", "sdpa_pct_floor", "err_last"]


def _lines(name: str, rows: list[dict], cols: list[str]) -> list[str]:
    out = [f"{name}: G B P S | " + " ".join(c.removesuffix("_us") for c in cols)]
    for r in rows:
        out.append(f"  {r['G']} {r['B']} {r['P']} {r['S']} | "
                   + " ".join(_f(r.get(c, "-")) for c in cols)
                   + (f" | error {r['error']}" if r.get("error") else ""))
    return out


def _f(v: object) -> str:
    if isinstance(v, float):
        return f"{v:.3g}" if abs(v) < 1 else f"{v:.1f}"
    return str(v)


def _median(rows: list[dict], key: str) -> str:
    vals = [float(r[key]) for r in rows if isinstance(r.get(key), float | int)]
    return _f(statistics.median(vals)) if vals else "-"


def summary(launch: list[dict], cascade: list[dict], paged: list[dict]) -> str:
    """The printed table: launch floor, one line per shape, medians per G, the issue's target
    shape (B 64, P 6000, S 256)."""
    lines = ["launch floor (us): " + ", ".join(
        f"{r['kind']}{'@' + str(r['bytes']) if r['bytes'] else ''}={r['us']:.2f}"
        for r in launch), ""]
    lines += _lines("cascade", cascade, CASCADE_COLS) + [""]
    lines += _lines("paged", paged, PAGED_COLS) + [""]
    for g in sorted({r["G"] for r in paged}):
        rs = [r for r in paged if r["G"] == g]
        lines.append(f"paged G={g}: median % of floor: paged {_median(rs, 'paged_pct_floor')}, "
                     f"best merge=last {_median(rs, 'best_last_pct_floor')}, "
                     f"sdpa {_median(rs, 'sdpa_pct_floor')}")
    for g in sorted({r["G"] for r in cascade}):
        rs = [r for r in cascade if r["G"] == g]
        lines.append(f"cascade G={g}: median % of floor: best {_median(rs, 'best_pct_floor')}, "
                     f"cascade {_median(rs, 'cascade_pct_floor')}; median x over paged_shared: "
                     f"best {_median(rs, 'speedup_best_vs_paged_shared')}, cascade "
                     f"{_median(rs, 'speedup_cascade_vs_paged_shared')}")
    for r in cascade:
        if (r["B"], r["P"], r["S"]) == (64, 6000, 256) and "best_us" in r:
            lines.append(f"target G={r['G']} B=64 P=6000 S=256: best {r['best']} "
                         f"{r['best_us']:.1f} us = {r['best_pct_floor']:.1f} % of the "
                         f"{r['floor_us']:.1f} us floor (want >= 50), "
                         f"{r['speedup_best_vs_paged_shared']:.2f}x over paged_shared "
                         f"(want >= 5), prefix {r['best_tflops']:.0f} TFLOP/s")
    return "\n".join(lines) + "\n"


def run_part(part: str, out: Path, spec: str, reps: int, budget_s: float) -> int:
    """One part in this process: ``cascade`` (stream rate, launch floor, cascade shapes) or
    ``paged`` (stream rate, paged shapes), no new shape after ``budget_s``."""
    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    gpu = dev.type == "cuda"
    shapes = parse_shapes(spec if gpu else {"cascade": "4x2x40x17", "paged": "4x2x200x0"}[part])
    hq, d = (32, 128) if gpu else (8, 32)
    t0, timer = time.time(), Timer(dev) if gpu else CpuTimer()
    torch.manual_seed(0)
    bw = measure_bandwidth(timer, dev)
    print(f"{part}: bandwidth (TB/s): {bw}", flush=True)
    reader = Reader(dev, READ_MAX if gpu else 1 << 20)
    if part == "cascade":
        launch_floor(timer, reader, CsvLog(out / "launch.csv", ["kind", "bytes", "us", "TBs"]),
                     reps)
    fn, fields = {"cascade": (cascade_shape, CASCADE_FIELDS),
                  "paged": (paged_shape, PAGED_FIELDS)}[part]
    _sweep(part, fn, shapes, CsvLog(out / f"{part}.csv", fields), t0 + budget_s, dev, timer,
           RandomKV(dev), reader, bw["floor_TBs"], reps, hq, d)
    return 0


def _typed(v: str) -> object:
    for kind in (int, float):
        try:
            return kind(v)
        except ValueError:
            pass
    return v


def _read(path: Path) -> list[dict]:
    if not path.is_file():
        return []
    with open(path, newline="") as f:
        return [{k: _typed(v) for k, v in r.items() if v != ""} for r in csv.DictReader(f)]


def main(argv: list[str] | None = None) -> int:
    """Command line (see the module docstring): each part in a child process (a fault in one
    part's kernels leaves the other part's rows), killed 60 s past its budget."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--cascade", default=CASCADE_SPEC)
    ap.add_argument("--paged", default=PAGED_SPEC)
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--budget-s", type=float, default=190.0,
                    help="no new cascade shape after 58 %% of it, no new paged shape after it")
    ap.add_argument("--part", choices=["cascade", "paged"], help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    for spec in (args.cascade, args.paged):
        try:
            parse_shapes(spec)
        except ValueError as e:
            ap.error(str(e))
    args.out.mkdir(parents=True, exist_ok=True)
    if args.part:
        return run_part(args.part, args.out, getattr(args, args.part), args.reps, args.budget_s)
    t0 = time.time()
    for part in ("cascade", "paged"):
        budget = (CASCADE_SHARE * args.budget_s if part == "cascade"
                  else args.budget_s - (time.time() - t0))
        cmd = [sys.executable, "-m", "parrotsim.kernels.bench_gqa", "--out", str(args.out),
               "--part", part, "--cascade", args.cascade, "--paged", args.paged,
               "--reps", str(args.reps), "--budget-s", str(max(budget, 1.0))]
        try:
            rc = subprocess.run(cmd, timeout=max(budget, 1.0) + 60).returncode
        except subprocess.TimeoutExpired:
            rc = "timeout"
        print(f"== {part}: exit {rc} at {time.time() - t0:.0f} s", flush=True)
    cascade, paged = _read(args.out / "cascade.csv"), _read(args.out / "paged.csv")
    bws = sorted({r["bw_TBs"] for r in cascade + paged if "bw_TBs" in r})
    text = (f"bench_gqa on {torch.cuda.get_device_name() if torch.cuda.is_available() else 'cpu'}"
            f", bytes floor at {', '.join(f'{b:.3f}' for b in bws)} TB/s (per part), "
            f"{time.time() - t0:.0f} s\n"
            + summary(_read(args.out / "launch.csv"), cascade, paged))
    (args.out / "table.txt").write_text(text)
    print(text, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
