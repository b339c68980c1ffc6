"""The paged kernel over shared prefix pages, as a profile's ``paged_shared_prefix`` grid.

    python -m parrotsim.calibrate.paged_shared BENCH_CSV --raw RAW_DIR --model llama-7b \
        [--column paged_shared_us] --into calibrate/profiles/h200_llama-7b.yaml [more ...]

When the sequences of a batch fork one prefix and the paged kernel reads it through block
tables that all point at the same pages, the programs of those sequences run together and
most prefix reads after the first hit L2: on the H200 the group costs far less than ``n``
private copies of the prefix, which is what the cost model charges without this grid.

``BENCH_CSV`` is a kernel benchmark with the paged kernel's time over shared pages on the
calibration's shared grid, one layer, CUDA graphs, L2 flushed, as the calibration times
kernels: ``kernels/results/session5/parrot2023.csv`` (column ``paged_shared_us``, LLaMA-7B) or
``kernels/results/session9/era_shared_pages.csv`` (``--column split_shared_us``, LLaMA-7B and
13B). A check that the benchmark and the calibration timed the same kernels the same way is
printed: the median ratio of the benchmark's shared-prefix kernel (``shared_us``) to the raw
calibration's ``shared`` section on the same points, or, where the benchmark has no such
column, of its paged kernel over private pages of the same lengths (``split_private_us``) to
the raw calibration's paged grid. The grid is fitted like
``shared_prefix`` (:func:`parrotsim.calibrate.fit.fit_shared`): the kernel's time minus the
suffixes' paged time on the raw paged grid, per (prefix, group size), times the layers. It is
written into every profile named by ``--into`` (same GPU and model: checked).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

from parrotsim.calibrate.fit import fit_shared, load_raw
from parrotsim.calibrate.pagedgrid import fit_paged_grid
from parrotsim.calibrate.roofline import MODELS
from parrotsim.core.errors import UsageError
from parrotsim.sim.model.costmodel import paged_grid_time
from parrotsim.sim.model.profile import dump_profile, load_profile
from parrotsim.sim.model.profile_parts import Grid2D, PagedGrid


def bench_rows(bench: pd.DataFrame, model: str, column: str) -> list[dict]:
    """Raw-calibration-style ``shared`` rows (one layer, microseconds) from ``column``."""
    sel = bench[bench["model"] == model]
    if sel.empty:
        raise UsageError(f"no rows for model {model} in the benchmark")
    return [{"section": "shared", "status": "ok", "batch": float(r.batch),
             "prefix": float(r.prefix), "suffix": float(r.suffix),
             "us_median": float(getattr(r, column))} for r in sel.itertuples()]


def timing_check(bench: pd.DataFrame, raw_rows: list[dict], model: str,
                 paged: PagedGrid, layers: int) -> float:
    """Median ratio of the benchmark's kernel times to the calibration's on the same work: the
    shared-prefix kernel (``shared_us``) against the raw ``shared`` section, else the paged
    kernel over private pages (``split_private_us``) against the raw paged grid."""
    sel = bench[bench["model"] == model]
    if "shared_us" in sel:
        raw = pd.DataFrame([r for r in raw_rows if r.get("section") == "shared"
                            and r.get("status") == "ok"])
        both = sel.merge(raw, on=["batch", "prefix", "suffix"])
        return (float(np.median(both["shared_us"] / both["us_median"])) if len(both)
                else float("nan"))
    if "split_private_us" in sel:
        model_us = [paged_grid_time(paged, int(r.batch), r.batch * (r.prefix + r.suffix))
                    * 1e6 / layers for r in sel.itertuples()]
        return float(np.median(sel["split_private_us"].to_numpy() / np.array(model_us)))
    return float("nan")


def paged_shared_grid(bench: pd.DataFrame, raw_dir: Path, model: str,
                      column: str = "paged_shared_us") -> tuple[Grid2D, float, float]:
    """The grid (from the benchmark's ``column``), its RMS relative error on the benchmark, and
    the timing check."""
    raw_rows, _ = load_raw(raw_dir)
    layers = MODELS[model].layers
    paged, _, _ = fit_paged_grid(raw_rows, layers)
    if paged is None:
        raise UsageError(f"{raw_dir}: no paged grid in the raw calibration")
    grid, rms = fit_shared(bench_rows(bench, model, column), layers,
                           lambda b, kv: paged_grid_time(paged, b, kv))
    return grid, rms, timing_check(bench, raw_rows, model, paged, layers)


def main(argv: list[str] | None = None) -> int:
    """Command line (see the module docstring)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("bench", type=Path)
    ap.add_argument("--raw", type=Path, required=True, help="the profile's raw calibration")
    ap.add_argument("--model", default="llama-7b", choices=sorted(MODELS))
    ap.add_argument("--column", default="paged_shared_us",
                    help="the benchmark's column of the paged kernel over shared pages")
    ap.add_argument("--into", type=Path, nargs="+", required=True, help="profiles to update")
    args = ap.parse_args(argv)
    grid, rms, check = paged_shared_grid(pd.read_csv(args.bench), args.raw, args.model,
                                         args.column)
    print(f"timing check: benchmark / calibration, median {check:.3f}")
    print(f"paged over shared pages: fitted grid RMS relative error {rms:.3f}")
    for path in args.into:
        prof = load_profile(path)
        if prof.model.name != args.model:
            raise UsageError(f"{path}: model {prof.model.name}, not {args.model}")
        curves = prof.curves.model_copy(update={"paged_shared_prefix": grid})
        dump_profile(prof.model_copy(update={"curves": curves}), path)
        print(f"wrote paged_shared_prefix into {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
