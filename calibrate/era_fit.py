"""Fit the era-kernel constants of :mod:`parrotsim.sim.model.era_kernels` to the H200 data.

    python -m parrotsim.calibrate.era_fit [--data kernels/results/session5]

* vLLM 0.1.4's no-split paged kernel (``era_paged.csv``): the saturating programs per SM and
  ``NO_SPLIT_BANDWIDTH_FACTOR`` of ``no_split(n, ctx) = factor * split(max(n, n_sat), ctx)``,
  ``n_sat = 132 * programs per SM / heads``, stored as ``NO_SPLIT_PROGRAMS_PER_TBS`` (per TB/s
  of the H200's datasheet 4.8),
  by grid search on the RMS log error over contexts >= 512 (both models' heads), ``split``
  the same file's split-KV times (log-log between batches);
* Parrot's 2023 prefix pass (``parrot2023.csv``, suffix 512): its time (the measured kernel
  minus the no-split suffix pass measured at the same batch and 512 tokens in
  ``era_paged.csv``) as ``launch + factor(batch) * shared_prefix(prefix, batch)`` of the
  ``h200_llama-7b`` profile, one launch term and one factor per batch, by least squares on
  microseconds (the long
  prefixes, whose time matters, weigh most).

It prints the constants and every point's error, then the composed Parrot 2023 cost
(prefix pass + the no-split model over the suffixes, through the cost model on
``h200_llama-7b``) against every measured point, both suffixes.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import numpy as np
import pandas as pd

from parrotsim.sim.model import era_kernels as era
from parrotsim.sim.model.costmodel import CostModel
from parrotsim.sim.model.curves import bilinear
from parrotsim.sim.model.profile import load_profile

DATA = Path(__file__).resolve().parents[1] / "kernels" / "results" / "session5"
H200_SMS = 132
H200_TB_S = 4.8
MIN_CONTEXT = 512
PROGRAMS_GRID = np.round(np.arange(1.0, 5.0001, 0.05), 2)
FACTOR_GRID = np.round(np.arange(1.05, 1.35001, 0.005), 3)


def _split_interp(df: pd.DataFrame) -> dict[tuple[str, int], tuple[np.ndarray, np.ndarray]]:
    """(model, context) -> (log batch, log split-KV us) sorted by batch."""
    out = {}
    for (model, ctx), g in df.groupby(["model", "ctx"]):
        g = g.sort_values("batch")
        out[(model, ctx)] = (np.log(g["batch"].to_numpy(float)),
                             np.log(g["split_kv_us"].to_numpy(float)))
    return out


def no_split_model(df: pd.DataFrame, programs: float, factor: float) -> np.ndarray:
    """Modelled no-split microseconds of every row of ``df`` (era_paged.csv)."""
    split = _split_interp(df)
    out = []
    for r in df.itertuples():
        lb, lt = split[(r.model, r.ctx)]
        n = max(r.batch, H200_SMS * programs / r.heads)
        out.append(factor * math.exp(np.interp(math.log(n), lb, lt)))
    return np.array(out)


def programs_per_tbs(programs_per_sm: float) -> float:
    """The H200's saturating programs per SM as programs per TB/s of its bandwidth."""
    return round(H200_SMS * programs_per_sm / H200_TB_S, 4)


def fit_no_split(df: pd.DataFrame) -> tuple[float, float, np.ndarray]:
    """(programs per SM, bandwidth factor, relative errors) minimising the RMS log error."""
    df = df[df["ctx"] >= MIN_CONTEXT]
    y = df["vllm014_us"].to_numpy(float)
    best = None
    for p in PROGRAMS_GRID:
        base = no_split_model(df, float(p), 1.0)
        for c in FACTOR_GRID:
            err = float(np.sqrt(np.mean(np.log(c * base / y) ** 2)))
            if best is None or err < best[0]:
                best = (err, float(p), float(c), c * base / y - 1)
    return best[1], best[2], best[3]


def fit_parrot_prefix(parrot: pd.DataFrame, paged: pd.DataFrame, profile: str = "h200_llama-7b"
                      ) -> tuple[float, dict[int, float], np.ndarray]:
    """(reduce launch s per layer, factor by batch, relative errors) of the prefix pass."""
    prof = load_profile(profile)
    layers = prof.model.layers
    rows = parrot[parrot["suffix"] == 512].drop_duplicates(["batch", "prefix"])
    era7 = paged[paged["model"] == prof.model.name].set_index(["batch", "ctx"])["vllm014_us"]
    batches = sorted(rows["batch"].unique())
    a, y = [], []
    for r in rows.itertuples():
        ours = bilinear(prof.curves.shared_prefix, r.prefix, r.batch) * 1e6 / layers
        target = r.parrot2023_us - era7[(r.batch, 512)]
        col = [1.0] + [ours if b == r.batch else 0.0 for b in batches]
        a.append(col)
        y.append(target)
    a, y = np.array(a), np.array(y)
    sol = np.linalg.lstsq(a, y, rcond=None)[0]
    resid = a @ sol / y - 1
    return float(sol[0]) * 1e-6, {int(b): float(f) for b, f in zip(batches, sol[1:],
                                                                  strict=True)}, resid


def composed_errors(parrot: pd.DataFrame, profile: str = "h200_llama-7b") -> pd.DataFrame:
    """Every measured Parrot 2023 point against the cost model's composition (prefix pass +
    no-split suffix pass) on ``profile``, per layer in microseconds."""
    prof = load_profile(profile)
    cm = CostModel(prof, "none", paged_kernel="vllm_0_1_4", kernel="parrot_2023")
    out = []
    for r in parrot.drop_duplicates(["batch", "prefix", "suffix"]).itertuples():
        t = (cm.paged_time(r.batch, r.batch * r.suffix)
             + cm.shared_prefix_time([(r.prefix, r.batch)])) * 1e6 / prof.model.layers
        out.append((r.batch, r.prefix, r.suffix, r.parrot2023_us, t, t / r.parrot2023_us - 1))
    return pd.DataFrame(out, columns=["batch", "prefix", "suffix", "measured_us", "model_us",
                                      "error"])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Fit the era-kernel constants.")
    ap.add_argument("--data", type=Path, default=DATA)
    args = ap.parse_args(argv)
    paged = pd.read_csv(args.data / "era_paged.csv")
    parrot = pd.read_csv(args.data / "parrot2023.csv")
    p, c, err = fit_no_split(paged)
    print(f"{p} programs per SM: NO_SPLIT_PROGRAMS_PER_TBS = {programs_per_tbs(p)}\n"
          f"NO_SPLIT_BANDWIDTH_FACTOR = {c}   (module: {era.NO_SPLIT_PROGRAMS_PER_TBS}, "
          f"{era.NO_SPLIT_BANDWIDTH_FACTOR})")
    print(f"  no-split, {len(err)} points (context >= {MIN_CONTEXT}): median |error| "
          f"{np.median(np.abs(err)):.3f}, worst {err.min():+.3f} / {err.max():+.3f}")
    launch, factors, perr = fit_parrot_prefix(parrot, paged)
    print("PARROT_PREFIX_FACTOR = (" + ", ".join(f"({b}, {f:.2f})" for b, f in factors.items())
          + ")")
    print(f"PARROT_REDUCE_LAUNCH_S = {launch:.2g}")
    print(f"  prefix pass, {len(perr)} points: median |error| {np.median(np.abs(perr)):.3f}, "
          f"worst {perr.min():+.3f} / {perr.max():+.3f}")
    comp = composed_errors(parrot)
    print(f"composed Parrot 2023 cost on h200_llama-7b (module constants), {len(comp)} points: "
          f"median |error| {comp['error'].abs().median():.3f}, worst "
          f"{comp['error'].min():+.3f} / {comp['error'].max():+.3f}")
    print(comp.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
