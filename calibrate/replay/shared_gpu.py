"""The shared-prefix kernel's decode iterations against its model and its kernel benchmark.

    python -m parrotsim.calibrate.replay.shared_gpu REAL_DIR [--profile h200_llama-7b]
        [--bench kernels/results/session5/parrot2023.csv]

For each run of ``REAL_DIR`` whose decode iterations the shared-prefix kernel served (graph
replays, one forked group of every decode), grouped by batch size, medians over iterations
(ms per iteration, all layers):

* ``attention``: the measured GPU time less the cost model's non-attention part (linear
  layers and per-sequence work, which the model gets right on plain decode batches), i.e.
  what the decode attention took;
* the model's attention: ``shared_prefix(prefix, n)`` (the profile's curve: the kernel's time
  less the paged kernel's for the suffixes, averaged over the calibration's suffixes of 64 and
  512 tokens) plus ``paged(n, suffix tokens)``, then plus the skewed-batch excess of the longest
  suffix (:attr:`~parrotsim.sim.model.costmodel.CostModel.suffix_waves`);
* the kernel benchmark (``--bench``, one layer, x layers): the same kernel at the nearest
  measured shape (batch, prefix and suffix nearest in log2), and at the mean suffix by a line
  through its suffixes of 64 and 512 tokens (the prefix interpolated linearly), then plus the
  same excess;
* the shape facts that could matter: the mean and longest suffix, whether the batch size is a
  captured graph bucket (else padded rows), the prefix in whole pages (what the kernel reads)
  and the mode ``auto`` picks without a tuning table (``fused`` for B*G <= 32, else
  ``concurrent``).
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd

from parrotsim.calibrate.replay.compare import replayed_runs
from parrotsim.calibrate.replay.gpu import BUCKETS
from parrotsim.sim.model.costmodel import CostModel
from parrotsim.sim.model.curves import Interp, bilinear
from parrotsim.sim.model.profile import Profile, load_profile

PAGE = 16


def bench_at(bench: pd.DataFrame, batch: int, prefix: float, suffix: float) -> tuple[float, str]:
    """(us per layer, shape) of the benchmark's ``shared_us`` nearest to the query in log2."""
    d = ((np.log2(bench["batch"]) - math.log2(batch)) ** 2
         + (np.log2(bench["prefix"]) - math.log2(prefix)) ** 2
         + (np.log2(bench["suffix"] + 16) - math.log2(suffix + 16)) ** 2)
    r = bench.loc[d.idxmin()]
    return float(r["shared_us"]), f"B={r['batch']:.0f} P={r['prefix']:.0f} S={r['suffix']:.0f}"


def bench_line(bench: pd.DataFrame, batch: int, prefix: float, suffix: float) -> float:
    """us per layer at ``suffix`` on the line through the benchmark's suffixes of 64 and 512
    tokens, the prefix interpolated linearly between its measured prefixes (NaN if absent)."""
    b = bench[bench["batch"] == batch]
    pts = {}
    for s in (64, 512):
        row = b[b["suffix"] == s].sort_values("prefix")
        if row.empty:
            return float("nan")
        pts[s] = float(np.interp(prefix, row["prefix"], row["shared_us"]))
    return pts[64] + (pts[512] - pts[64]) * (suffix - 64) / (512 - 64)


def shared_iterations(run: Path, profile: Profile, bench: pd.DataFrame | None) -> pd.DataFrame:
    """Per batch size: the medians described in the module docstring (empty if none)."""
    meta = json.loads((run / "meta.json").read_text())
    prefix = int(meta["config"]["workload"].get("shared_prefix") or 0)
    it = pd.read_parquet(run / "iterations.parquet")
    it = it[(it["prefill_seqs"] == 0) & (it["graph"] == 1) & (it["shared_groups"] == 1)
            & (it["shared_pages"] > 0)]
    if it.empty or not prefix:
        return pd.DataFrame()
    cm = CostModel(profile, "(kernel only)")
    layers = profile.model.layers
    rows = []
    for n, g in it.groupby("decode_seqs"):
        n = int(n)
        suffix_kv = (g["decode_kv_tokens"] - prefix * n).to_numpy(float)
        longest = (g["decode_max_ctx"] - prefix).to_numpy(float)
        rest = (cm.overhead + Interp.of(profile.curves.linear).scalar(n)
                + profile.curves.decode_per_seq_s * n)
        shared = bilinear(profile.curves.shared_prefix, prefix, n)
        paged = np.array([cm.paged_time(n, k) for k in suffix_kv])
        excess = (np.array([cm.paged_excess(n, k, m) for k, m in zip(suffix_kv, longest,
                                                                      strict=True)])
                  if cm.waves is not None else np.zeros(len(g)))
        attention = g["gpu_s"].to_numpy(float) - rest
        mean_suffix = float(np.median(suffix_kv / n))
        pages = int(g["shared_pages"].iloc[0])
        row = {"run": run.name, "n": n, "iters": len(g), "mean_suffix": mean_suffix,
               "longest_suffix": float(np.median(longest)), "bucket": n in BUCKETS,
               "prefix": prefix, "prefix_read": pages * PAGE,
               "auto_mode": "paged" if n == 1 else "fused" if n <= 32 else "concurrent",
               "attention_ms": np.median(attention) * 1e3,
               "model_ms": np.median(shared + paged) * 1e3,
               "model_excess_ms": np.median(shared + paged + excess) * 1e3}
        if bench is not None:
            us, shape = bench_at(bench, n, prefix, mean_suffix)
            line = bench_line(bench, n, pages * PAGE, mean_suffix) * layers / 1e3
            row.update(bench_nearest_ms=us * layers / 1e3, bench_shape=shape,
                       bench_line_ms=line, bench_line_excess_ms=line + np.median(excess) * 1e3)
        rows.append(row)
    return pd.DataFrame(rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m parrotsim.calibrate.replay.shared_gpu",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("real_dir", type=Path)
    ap.add_argument("--profile", default="h200_llama-7b")
    ap.add_argument("--bench", type=Path, help="a kernels parrot2023.csv (shared_us per layer)")
    args = ap.parse_args(argv)
    profile = load_profile(args.profile)
    bench = pd.read_csv(args.bench) if args.bench else None
    frames = [shared_iterations(run, profile, bench) for run in replayed_runs(args.real_dir)]
    d = pd.concat([f for f in frames if not f.empty], ignore_index=True) if any(
        not f.empty for f in frames) else pd.DataFrame()
    if d.empty:
        raise SystemExit(f"{args.real_dir}: no decode iteration served by the shared-prefix kernel")
    for col in [c for c in d.columns if c.endswith("_ms") and c != "attention_ms"]:
        d[col.replace("_ms", "_err%")] = (d[col] / d["attention_ms"] - 1) * 100
    pd.set_option("display.width", 250)
    print(f"profile {profile.name}; medians per iteration, ms over {profile.model.layers} "
          "layers; *_err% = that estimate / measured attention - 1")
    print(d.round(3).T.to_string())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
