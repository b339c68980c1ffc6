"""Step 2b of the fit: the paged decode kernel as a (sequences x context) table.

The paged kernel's time is not a function of the KV tokens read alone: with split-KV
decoding the number of programs, and so the number of waves over the multiprocessors, depends
on the batch size (on the H200 at LLaMA-13B shapes, 16 sequences run ~22 % slower per KV token
than 8 or 32 at the same KV tokens). :func:`fit_paged_grid` keeps the measured grid instead:

1. one layer's median time x layers, per (batch, context) point of the ``paged`` section;
2. per batch row, cells not measured (the grid skips batch x context > 1M KV tokens, or a point
   ran out of memory) are interpolated linearly in context between measured ones, or extended
   linearly from the last two measured contexts past the end, after the measured cells are
   made non-decreasing in context (pool adjacent violators);
3. a column at context 0 holds each row's linear extension of its first two contexts (floored
   at 1 % of the first), so short contexts interpolate, as the 1-D curve's knot at 0 did.

:class:`parrotsim.sim.model.costmodel.CostModel` evaluates the table at the batch's sequence count and mean
context (linear in context, log-log in sequences). Rows with fewer than two measured contexts
are dropped; with fewer than two rows left there is no table (the 1-D curve is used).

:func:`paged_waves` adds how the kernel's programs fill the GPU (``curves.decode_paged_waves``:
the run's SM count and the compiled kernel's programs per SM, both in ``env.json``), with which
the cost model charges a batch of unequal contexts its longest sequence's critical path
(:mod:`parrotsim.sim.model.paged_waves`).
"""

from __future__ import annotations

import numpy as np

from parrotsim.calibrate import curvefit as cf
from parrotsim.sim.model.costmodel import paged_grid_time
from parrotsim.sim.model.profile_parts import PagedGrid, PagedWaves

MIN_FRACTION_AT_ZERO = 0.01


def _fill_row(ctxs: np.ndarray, row: np.ndarray) -> np.ndarray:
    """The measured cells made non-decreasing, then the missing (NaN) ones linear between
    them and extended linearly past them (so the row stays non-decreasing)."""
    ok = ~np.isnan(row)
    return cf.hat_basis(ctxs, ctxs[ok]) @ cf.isotonic(row[ok])


def fit_paged_grid(rows: list[dict], layers: int) -> tuple[PagedGrid | None, float, list[str]]:
    """The table from the ``paged`` section's ``ok`` rows (one layer, microseconds), its RMS
    relative error at the measured points, and the cells filled rather than measured."""
    pts = [r for r in rows if r["section"] == "paged" and r.get("status") == "ok"]
    batches = sorted({int(r["batch"]) for r in pts})
    ctxs = sorted({int(r["ctx"]) for r in pts})
    table = np.full((len(batches), len(ctxs)), np.nan)
    for r in pts:
        table[batches.index(int(r["batch"])), ctxs.index(int(r["ctx"]))] = (
            r["us_median"] * 1e-6 * layers)
    keep = [i for i in range(len(batches)) if (~np.isnan(table[i])).sum() >= 2]
    if len(keep) < 2 or len(ctxs) < 2:
        return None, float("nan"), []
    c = np.array(ctxs, dtype=float)
    filled = [f"{batches[i]}x{ctxs[j]}" for i in keep for j in range(len(ctxs))
              if np.isnan(table[i, j])]
    out = []
    for i in keep:
        row = _fill_row(c, table[i])
        slope = (row[1] - row[0]) / (c[1] - c[0])
        at_zero = max(row[0] - slope * c[0], MIN_FRACTION_AT_ZERO * row[0])
        out.append(([at_zero] if c[0] > 0 else []) + row.tolist())
    ys = ([0.0] if c[0] > 0 else []) + c.tolist()
    grid = PagedGrid(x=[float(batches[i]) for i in keep], y=ys, seconds=out)
    pred = np.array([paged_grid_time(grid, int(r["batch"]), r["batch"] * r["ctx"])
                     for r in pts])
    meas = np.array([r["us_median"] * 1e-6 * layers for r in pts])
    rms = float(np.sqrt(np.mean(cf.rel_errors(pred, meas) ** 2)))
    return grid, rms, filled


def paged_waves(env: dict, grid: PagedGrid | None) -> tuple[PagedWaves | None, str]:
    """The skewed-batch term (``curves.decode_paged_waves``) from the run's SM count and the
    paged kernel's occupancy that ``env.json`` records (:mod:`parrotsim.kernels.occupancy`),
    and a note saying where both came from or why the profile goes without."""
    occ = env.get("paged_occupancy") or {}
    split = occ.get("split") or {}
    if grid is None or "sms" not in env or "programs_per_sm" not in split:
        return None, "none (env.json records no SM count or no paged_occupancy)"
    x = grid.falling_row()
    if x is not None:
        return None, f"none (the paged grid's row of {x:g} sequences falls with the context)"
    waves = PagedWaves(sms=int(env["sms"]), programs_per_sm=int(split["programs_per_sm"]))
    note = (f"sms: the run's {waves.sms}; programs_per_sm: the paged kernel compiled for sm_"
            f"{occ.get('capability', '?').replace('.', '')} by Triton {occ.get('triton', '?')} "
            f"holds {split.get('regs')} registers x {32 * int(occ.get('warps', 4))} threads and "
            f"{split.get('smem')} B of shared memory, so {waves.programs_per_sm} programs fit an "
            "SM (python -m parrotsim.kernels.occupancy)")
    if occ.get("note"):
        note += f"; {occ['note']}"
    return waves, note
