"""Evaluating a profile's curves: piecewise-linear interpolation in one and two dimensions.

* :class:`Interp`: a :class:`~parrotsim.sim.model.profile_parts.Curve` (seconds vs one quantity), linear between
  points and extended linearly past the ends, with the range that counts as measured;
* :class:`PagedRows`: the paged decode kernel's seconds vs KV tokens at a given number of
  decoding sequences, from a :class:`~parrotsim.sim.model.profile_parts.PagedGrid` (or the 1-D curve when the profile
  has no grid);
* :func:`bilinear`: a :class:`~parrotsim.sim.model.profile_parts.Grid2D` at one point.

All values are seconds for the whole model; the cost model composes them per iteration.
"""

from __future__ import annotations

import math
import weakref
from bisect import bisect_right

from parrotsim.sim.model.profile_parts import Curve, Grid2D, PagedGrid


class Interp:
    """Piecewise-linear interpolation; the end segments extend linearly past the grid.
    Evaluations outside ``[lo, hi]`` count as extrapolated."""

    __slots__ = ("xs", "ys", "lo", "hi", "last")

    def __init__(self, xs: list[float], ys: list[float], lo: float | None = None) -> None:
        self.xs, self.ys = xs, ys
        self.lo = xs[0] if lo is None else lo
        self.hi = xs[-1]
        self.last = len(self.xs) - 2

    @classmethod
    def of(cls, curve: Curve) -> Interp:
        return cls(list(curve.x), list(curve.seconds))

    def scalar(self, x: float) -> float:
        xs, ys = self.xs, self.ys
        i = bisect_right(xs, x) - 1
        if i < 0:
            i = 0
        elif i > self.last:
            i = self.last
        return ys[i] + (ys[i + 1] - ys[i]) * ((x - xs[i]) / (xs[i + 1] - xs[i]))


NO_TIME = Interp([0.0, 1.0], [0.0, 0.0], lo=-math.inf)  # no decodes (with a grid): no time
NO_TIME.hi = math.inf


class PagedRows:
    """Sequence count -> the paged kernel's seconds vs KV tokens (:meth:`row`).

    Without a grid every count maps to the profile's ``decode_paged`` curve. With a
    :class:`PagedGrid`, the row for ``n`` is piecewise linear through ``(n * y[j], s_j)``, each
    ``s_j`` log-log interpolated between the grid's sequence counts around ``n`` (extended
    log-log past the last, clamped below the first; either way every evaluation of such a row
    counts as extrapolated); no decodes take no time.
    """

    def __init__(self, g: PagedGrid | None, curve: Interp) -> None:
        self.g, self.curve = g, curve
        if g is not None:
            self.logb, self.logt = _log_tables(g)

    def row(self, n: float) -> Interp:
        """The row of ``n`` sequences (fractional for a wave's width,
        :mod:`parrotsim.sim.model.paged_waves`)."""
        g = self.g
        if g is None:
            row = self.curve
        elif n <= 0:
            row = NO_TIME
        else:
            logb = self.logb
            i = min(max(bisect_right(g.x, n) - 1, 0), len(g.x) - 2)
            t = max(0.0, (math.log(n) - logb[i]) / (logb[i + 1] - logb[i]))
            ys = [math.exp(a + (b - a) * t)
                  for a, b in zip(self.logt[i], self.logt[i + 1], strict=True)]
            xs = [n * c for c in g.y]
            row = Interp(xs, ys, lo=xs[0] if g.x[0] <= n <= g.x[-1] else math.inf)
        return row


#: id(grid) -> (a weak reference to the grid, log of its sequence counts, log of its seconds):
#: every engine of a run builds :class:`PagedRows` (and a wave model) on the same grid
_LOG_TABLES: dict[int, tuple[weakref.ref, list[float], list[list[float]]]] = {}


def _log_tables(g: PagedGrid) -> tuple[list[float], list[list[float]]]:
    """The logs :meth:`PagedRows.row` interpolates between, computed once per grid object
    (read-only, shared; an entry goes when its grid does)."""
    key = id(g)
    entry = _LOG_TABLES.get(key)
    if entry is not None and entry[0]() is g:
        return entry[1], entry[2]
    logb = [math.log(b) for b in g.x]
    logt = [[math.log(s) for s in row] for row in g.seconds]
    _LOG_TABLES[key] = (weakref.ref(g, lambda _ref: _LOG_TABLES.pop(key, None)), logb, logt)
    return logb, logt


def bilinear(g: Grid2D, x: float, y: float, extend_y: bool = False) -> float:
    """Bilinear interpolation on ``g`` (linear in x past the ends; y clamped at the edges, or
    linear past them with ``extend_y``)."""
    xs, ys = g.x, g.y
    i = min(max(bisect_right(xs, x) - 1, 0), len(xs) - 2)
    j = min(max(bisect_right(ys, y) - 1, 0), len(ys) - 2)
    tx = (x - xs[i]) / (xs[i + 1] - xs[i])
    ty = (y - ys[j]) / (ys[j + 1] - ys[j])
    if not extend_y:
        ty = min(max(ty, 0.0), 1.0)
    z = g.seconds
    top = z[i][j] + (z[i][j + 1] - z[i][j]) * ty
    bottom = z[i + 1][j] + (z[i + 1][j + 1] - z[i + 1][j]) * ty
    return max(0.0, top + (bottom - top) * tx)
