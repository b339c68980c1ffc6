"""Fit shared-prefix decode times to ``fixed_us + prefix FLOPs / rate``, per group size G.

    python -m parrotsim.kernels.cascade_fit FILE.csv [--time shared_us] [--min-batch 48]
        [--min-prefix 3000] [--max-suffix 17]

FILE: a shape table with columns G, B, P, S and a time column in microseconds
(``kernels/results/session5/shapes.csv``: ``shared_us``; ``bench_gqa``'s ``cascade.csv``:
``cascade_us``, ``fused_last_us``, ``best_us``, ...). The prefix phase of the cascade is a
product of B*G query rows with P keys per KV head: ``4 * B * Hq * P * D`` FLOPs (QK and PV),
the same at every G, while its bytes shrink as 1/G. A least-squares line through the shapes
with short suffixes says which one bounds it: a fixed cost (launches, merge, fill) plus a FLOP
rate. Prints, per G: shapes, fixed us, TFLOP/s, worst residual.
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path

import numpy as np

HQ, D = 32, 128


def prefix_gflop(b: int, p: int, hq: int = HQ, d: int = D) -> float:
    """FLOPs of the prefix phase (QK and PV of B*Hq query rows over P keys), in GFLOP."""
    return 4 * b * hq * p * d / 1e9


def fit(rows: list[dict], time_col: str) -> dict[int, tuple[int, float, float, float]]:
    """Per G: (shapes, fixed_us, TFLOP/s, max |residual| us) of ``t = a + GFLOP * b``."""
    out = {}
    for g in sorted({int(r["G"]) for r in rows}):
        rs = [r for r in rows if int(r["G"]) == g and r.get(time_col, "") not in ("", None)]
        if len(rs) < 2:
            continue
        f = np.array([prefix_gflop(int(r["B"]), int(r["P"])) for r in rs])
        t = np.array([float(r[time_col]) for r in rs])
        (a, b), *_ = np.linalg.lstsq(np.vstack([np.ones_like(f), f]).T, t, rcond=None)
        out[g] = (len(rs), float(a), 1e3 / float(b), float(np.abs(a + b * f - t).max()))
    return out


def main(argv: list[str] | None = None) -> int:
    """Command line (see the module docstring)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("file", type=Path)
    ap.add_argument("--time", default="shared_us")
    ap.add_argument("--min-batch", type=int, default=48)
    ap.add_argument("--min-prefix", type=int, default=3000)
    ap.add_argument("--max-suffix", type=int, default=17)
    args = ap.parse_args(argv)
    with open(args.file, newline="") as f:
        rows = [r for r in csv.DictReader(f) if not r.get("error")
                and int(r["B"]) >= args.min_batch and int(r["P"]) >= args.min_prefix
                and int(r["S"]) <= args.max_suffix]
    for g, (n, a, rate, worst) in fit(rows, args.time).items():
        print(f"G={g}: {n} shapes: {args.time} = {a:.1f} us + prefix GFLOP / {rate:.0f} TFLOP/s "
              f"(worst residual {worst:.1f} us)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
