"""Numerical helpers of the fitter (numpy only): piecewise-linear least squares and isotonic
smoothing.

A piecewise-linear curve with knots ``k_0 < ... < k_m`` is a sum of "hat" functions, one per
knot, weighted by the curve's value at that knot; the end hats extend linearly past the first
and last knot, as :class:`parrotsim.sim.model.costmodel.CostModel` extends curves. Fitting the knot values (and
optionally coefficients of extra columns, e.g. a cost per sequence) is then ordinary linear
least squares, weighted by ``1 / y`` so that relative errors count.
"""

from __future__ import annotations

import numpy as np


def hat_basis(x: np.ndarray, knots: np.ndarray) -> np.ndarray:
    """Matrix ``A[i, j]``: weight of knot ``j``'s value in the curve at ``x[i]``."""
    x = np.asarray(x, dtype=float)
    k = np.asarray(knots, dtype=float)
    seg = np.clip(np.searchsorted(k, x, side="right") - 1, 0, len(k) - 2)
    t = (x - k[seg]) / (k[seg + 1] - k[seg])
    a = np.zeros((len(x), len(k)))
    rows = np.arange(len(x))
    a[rows, seg] = 1 - t
    a[rows, seg + 1] += t
    return a


def fit_piecewise(x: np.ndarray, y: np.ndarray, knots: np.ndarray,
                  extra: np.ndarray | None = None, relative: bool = True
                  ) -> tuple[np.ndarray, np.ndarray]:
    """Least-squares knot values (and coefficients of the ``extra`` columns) for ``y``.

    Returns ``(values at knots, extra coefficients)``; knots no point constrains are filled by
    linear interpolation of their neighbours.
    """
    x, y = np.asarray(x, float), np.asarray(y, float)
    a = hat_basis(x, knots)
    used = a.sum(axis=0) > 0
    cols = a[:, used]
    if extra is not None:
        cols = np.hstack([cols, np.asarray(extra, float).reshape(len(x), -1)])
    w = 1 / np.maximum(np.abs(y), 1e-12) if relative else np.ones_like(y)
    coef, *_ = np.linalg.lstsq(cols * w[:, None], y * w, rcond=None)
    vals = np.interp(knots, np.asarray(knots)[used], coef[:used.sum()])
    return vals, coef[used.sum():]


def isotonic(y: np.ndarray, w: np.ndarray | None = None) -> np.ndarray:
    """Non-decreasing least-squares fit to ``y`` (pool adjacent violators)."""
    y = np.asarray(y, float)
    w = np.ones_like(y) if w is None else np.asarray(w, float)
    blocks: list[list[float]] = []  # [mean, weight, count]
    for yi, wi in zip(y, w, strict=True):
        blocks.append([yi, wi, 1])
        while len(blocks) > 1 and blocks[-2][0] > blocks[-1][0]:
            m2, w2, c2 = blocks.pop()
            m1, w1, c1 = blocks.pop()
            blocks.append([(m1 * w1 + m2 * w2) / (w1 + w2), w1 + w2, c1 + c2])
    return np.concatenate([[m] * c for m, _, c in blocks])


def log_knots(lo: float, hi: float, per_octave: float = 1.0, zero: bool = True) -> np.ndarray:
    """Knots from ``lo`` to ``hi`` spaced by factors of about ``2 ** (1 / per_octave)``, with
    a knot at 0 first if ``zero``."""
    n = max(1, int(np.ceil(np.log2(hi / lo) * per_octave)))
    k = np.unique(np.round(np.geomspace(lo, hi, n + 1)))
    return np.concatenate([[0.0], k]) if zero and k[0] > 0 else k


def supported_knots(knots: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``knots`` without the interior ones that no point of ``x`` pins: a knot stays when some
    point lies nearer to it than to its neighbours (its hat weight >= 1/2). A hat-basis fit
    otherwise leaves the knot's value to the least-squares solver (calibrate --quick's sparse
    prefill points gave 154 ms where about 5 ms belonged)."""
    keep = [float(k) for k in knots]
    i = 1
    while i < len(keep) - 1:
        lo, k, hi = keep[i - 1], keep[i], keep[i + 1]
        if not ((x > (lo + k) / 2) & (x < (k + hi) / 2)).any():
            del keep[i]
            i = max(1, i - 1)
        else:
            i += 1
    return np.array(keep)


def curve_at(x: float, knots, values) -> float:
    """A piecewise-linear curve (linear past its ends) at one point."""
    return float((hat_basis(np.array([x]), knots) @ np.asarray(values, float))[0])


def rel_errors(pred: np.ndarray, meas: np.ndarray) -> np.ndarray:
    """``pred / meas - 1``."""
    return np.asarray(pred, float) / np.asarray(meas, float) - 1
