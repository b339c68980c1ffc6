"""Skewed decode batches: the cost model's paged-kernel excess against measurements (no GPU).

    python -m parrotsim.calibrate.replay.skew calibrate/replay/data/*/ [--profile P]
    python -m parrotsim.calibrate.replay.skew --bench skew.csv [--profile P]

* **Replayed iterations** (``REAL_DIR/runs/*/iterations.parquet``, held out: nothing is fitted
  on them): every CUDA-graph decode-only iteration without shared-prefix groups, its measured
  GPU time (``gpu_s``) against the cost model's GPU time (no runtime terms) *before* (``n``
  sequences of the mean context, the profile without ``decode_paged_waves``) and *after* (plus
  :meth:`~parrotsim.sim.model.costmodel.CostModel.paged_excess` of the logged longest context),
  as signed and absolute per-cent errors by batch size and imbalance (longest / mean context).
* **The kernel bench** (:mod:`parrotsim.kernels.bench_skew`'s CSV, one layer on the GPU):
  measured ``skew / mean`` and ``toward_longest = (skew - mean) / (long - mean)`` beside the
  model's, and the programs per SM the one-split knee implies.

``--profile`` (default ``h200_llama-7b``) must carry ``curves.decode_paged_waves``, or give
``--waves SMS,PROGRAMS_PER_SM`` to evaluate one.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd

from parrotsim.sim.model.costmodel import CostModel
from parrotsim.sim.model.profile import Profile, load_profile
from parrotsim.sim.model.profile_parts import PagedWaves

SEQ_BINS = [0, 1, 2, 4, 8, 12, 16, 24, 32, 64, 256]
IMBALANCE_BINS = [1.0, 1.2, 1.5, 2.0, 3.0, math.inf]
KERNEL_ONLY = "(kernel only)"  # a runtime no profile lists: no host terms


def with_waves(profile: Profile, waves: PagedWaves | None) -> Profile:
    """``profile`` with ``curves.decode_paged_waves`` replaced (None: removed)."""
    curves = profile.curves.model_copy(update={"decode_paged_waves": waves})
    return profile.model_copy(update={"curves": curves})


def excess_seconds(iters: pd.DataFrame, profile: Profile, prefix: int = 0) -> np.ndarray:
    """Seconds ``profile``'s paged-kernel excess adds to each logged iteration (from its decode
    count, KV tokens and longest context; 0 without ``decode_paged_waves``). An iteration the
    shared-prefix kernel served (one group of every decode, ``shared_pages`` > 0) gets the
    excess of its suffixes when ``prefix`` (the group's prefix tokens) is given, else 0, as
    do other iterations with groups."""
    cm = CostModel(profile, KERNEL_ONLY)
    if cm.waves is None:
        return np.zeros(len(iters))
    n = iters["decode_seqs"].to_numpy(int)
    served = (iters["shared_groups"] == 1).to_numpy().copy()
    if "shared_pages" in iters:
        served &= (iters["shared_pages"] > 0).to_numpy()
    pre = np.where(served, prefix, 0)
    use = (iters["shared_groups"] == 0).to_numpy() | (pre > 0)
    kv = iters["decode_kv_tokens"].to_numpy(int) - pre * n
    longest = iters["decode_max_ctx"].to_numpy(int) - pre
    return np.array([cm.paged_excess(a, k, m) if u else 0.0
                     for a, k, m, u in zip(n, kv, longest, use, strict=True)])


def model_for(iters: pd.DataFrame, run_meta: dict, profile: Profile) -> pd.Series:
    """The logged kernel-only ``model_s`` as ``profile`` would charge it: the excess of the
    waves the replay logged with (``run_meta["model_s_paged_waves"]``; absent in replays
    made before the excess existed) taken out, ``profile``'s put in. Shared-prefix kernel
    batches logged before their suffixes got the excess (no ``model_s_suffix_waves`` in
    ``run_meta``) get it from the workload's ``shared_prefix`` (the Bing replays)."""
    logged = run_meta.get("model_s_paged_waves")
    then = with_waves(profile, PagedWaves(**logged) if logged else None)
    prefix = 0 if run_meta.get("model_s_suffix_waves") else int(
        run_meta.get("config", {}).get("workload", {}).get("shared_prefix") or 0)
    return (iters["model_s"] + excess_seconds(iters, profile, prefix)
            - excess_seconds(iters, then))


def decode_iterations(real_dir: Path, profile: Profile) -> pd.DataFrame:
    """The graph-replayed decode-only iterations of every run, with ``before_s``/``after_s``."""
    before = CostModel(with_waves(profile, None), KERNEL_ONLY)
    after = CostModel(profile, KERNEL_ONLY)
    if after.waves is None:
        raise ValueError(f"profile {profile.name}: no curves.decode_paged_waves (give --waves)")
    frames = []
    for run in sorted(p.parent for p in (real_dir / "runs").glob("*/iterations.parquet")):
        it = pd.read_parquet(run / "iterations.parquet")
        it = it[(it["prefill_seqs"] == 0) & (it["decode_seqs"] > 0) & (it["graph"] == 1)
                & (it["shared_groups"] == 0)]
        n = it["decode_seqs"].to_numpy(int)
        kv = it["decode_kv_tokens"].to_numpy(int)
        longest = it["decode_max_ctx"].to_numpy(int)
        b = np.array([before.decode_stretch(a, k, 0, []).first for a, k in zip(n, kv,
                                                                                 strict=True)])
        e = np.array([after.paged_excess(a, k, m) for a, k, m in zip(n, kv, longest,
                                                                      strict=True)])
        frames.append(pd.DataFrame({
            "run": f"{real_dir.name}/{run.name}", "n": n, "imbalance": longest * n / kv,
            "gpu_s": it["gpu_s"].to_numpy(float), "before_s": b, "after_s": b + e}))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def error_table(d: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """Iterations, median signed and absolute per-cent errors before and after, per group."""
    d = d.assign(before=(d["before_s"] / d["gpu_s"] - 1) * 100,
                 after=(d["after_s"] / d["gpu_s"] - 1) * 100)
    g = d.groupby(by, observed=True)
    return pd.DataFrame({
        "iters": g.size(),
        "before_med": g["before"].median(), "after_med": g["after"].median(),
        "before_abs": g["before"].apply(lambda x: x.abs().median()),
        "after_abs": g["after"].apply(lambda x: x.abs().median())}).round(2)


def binned(d: pd.DataFrame) -> pd.DataFrame:
    return d.assign(seqs=pd.cut(d["n"], SEQ_BINS),
                    max_over_mean=pd.cut(d["imbalance"], IMBALANCE_BINS, include_lowest=True))


def bench_table(csv: Path, profile: Profile) -> tuple[pd.DataFrame, dict]:
    """The bench's skew rows with measured and modelled ratios, and the knee's reading."""
    d = pd.read_csv(csv)
    meta_path = csv.with_suffix(".json")
    meta = json.loads(meta_path.read_text()) if meta_path.is_file() else {}
    cm = CostModel(profile, KERNEL_ONLY)
    key = ["n", "k_long", "longest"]
    wide = d[d["kind"] != "knee"].pivot_table(index=key, columns="kind", values="us_median")
    kv = d[d["kind"] == "skew"].set_index(key)
    rows = []
    for (n, k, long), r in wide.iterrows():
        tot = int(kv.loc[(n, k, long), "kv_tokens"])
        mean = cm.paged_time(n, tot)
        skew = mean + cm.paged_excess(n, tot, long)
        at_long = cm.paged_time(n, n * long)
        rows.append({"n": n, "k_long": k, "longest": long,
                     "skew_over_mean": r["skew"] / r["mean"], "model": skew / mean,
                     "toward_longest": (r["skew"] - r["mean"]) / (r["long"] - r["mean"]),
                     "model_toward": (skew - mean) / (at_long - mean)})
    knee = d[d["kind"] == "knee"].sort_values("n")
    reading = {}
    if len(knee) > 1 and meta.get("sms"):
        us = knee["us_median"].to_numpy()
        jumps = np.nonzero(us[1:] > 1.25 * us[:-1])[0]
        if len(jumps):
            fits = int(knee["n"].iloc[jumps[0]])  # the last batch before the first step up
            reading = {"knee_after_seqs": fits, "programs_per_sm": math.ceil(
                fits * int(meta["kv_heads"]) / int(meta["sms"]))}
    return pd.DataFrame(rows).round(3), {**meta, **reading}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m parrotsim.calibrate.replay.skew",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("real_dirs", type=Path, nargs="*")
    ap.add_argument("--profile", default="h200_llama-7b")
    ap.add_argument("--waves", help="SMS,PROGRAMS_PER_SM (overrides the profile's)")
    ap.add_argument("--bench", type=Path, help="a kernels.bench_skew CSV")
    args = ap.parse_args(argv)
    profile = load_profile(args.profile)
    if args.waves:
        sms, per_sm = (int(x) for x in args.waves.split(","))
        profile = with_waves(profile, PagedWaves(sms=sms, programs_per_sm=per_sm))
    pd.set_option("display.width", 200)
    if args.bench:
        table, meta = bench_table(args.bench, profile)
        print(json.dumps(meta))
        print(table.to_string(index=False))
    frames = [decode_iterations(d, profile) for d in args.real_dirs]
    if not frames:
        return 0
    d = binned(pd.concat(frames, ignore_index=True))
    w = profile.curves.decode_paged_waves
    print(f"decode GPU time, model / measured - 1 (%), profile {profile.name} with "
          f"{w.sms} SMs x {w.programs_per_sm} programs; before = n sequences of the mean "
          "context, after = + the longest sequence's excess")
    print("\nper run:\n" + error_table(d, ["run"]).to_string())
    print("\nby sequences (all runs):\n" + error_table(d, ["seqs"]).to_string())
    skew = d[d["imbalance"] > 1.5]
    print("\nmax/mean > 1.5, by sequences:\n" + error_table(skew, ["seqs"]).to_string())
    print("\nby sequences and max/mean:\n"
          + error_table(d, ["seqs", "max_over_mean"]).to_string())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
