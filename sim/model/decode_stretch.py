"""Consecutive decode-only iterations of one engine, costed in closed form.

A decode stretch is ``k`` iterations in which every sequence reads one more KV token per step
and nothing joins or leaves; :meth:`parrotsim.sim.model.costmodel.CostModel.decode_stretch`
builds one, and the engine fast-forwards through it in a single event (seconds throughout).
"""

from __future__ import annotations

import math
from bisect import bisect_right
from typing import TYPE_CHECKING

from parrotsim.sim.model.curves import Interp
from parrotsim.sim.model.paged_waves import ExcessSeries

if TYPE_CHECKING:
    from parrotsim.sim.model.costmodel import CostModel


class DecodeStretch:
    """Durations of consecutive decode-only iterations whose KV reads grow linearly.

    Step ``j`` lasts ``fixed + host_token * growth * j + scale * (base + paged(kv0 + growth * j)
    + excess(j))`` (``fixed``: the runtime's host time per step, its per-sequence part and its
    per-context-token part at step 0 (``context0`` tokens) included;
    ``excess``: the optional skewed-batch :class:`~parrotsim.sim.model.paged_waves.ExcessSeries`,
    else 0). The paged curve (at the stretch's fixed sequence count) and the excess are
    piecewise linear, so the durations form an arithmetic series on each segment and the
    length of ``k`` steps has a closed form: a stretch of thousands of iterations costs a few
    float operations. It equals the sum of the single steps up to float rounding (< 1 ns).
    """

    __slots__ = ("cm", "base", "kv0", "growth", "paged", "n_seqs", "fixed", "first", "_a0", "_b0",
                 "_n0", "excess", "_host_b")

    def __init__(self, cm: CostModel, base: float, kv0: int, growth: int,
                 paged: Interp, n_seqs: int = 0, excess: ExcessSeries | None = None,
                 context0: int = 0) -> None:
        self.cm, self.base, self.kv0, self.growth, self.paged = cm, base, kv0, growth, paged
        self.n_seqs = n_seqs
        self.excess = excess
        # The first segment's series (most stretches never leave it): step j lasts a0 + b0 * j
        # for j < n0.
        self.fixed, seg, slope, self._a0 = _first_line(cm, base, kv0, paged, n_seqs, context0)
        xs, last = paged.xs, paged.last
        self._host_b = cm.host_per_token * growth  # the host time's growth per step
        self._b0 = cm.scale * slope * growth + self._host_b
        if seg == last or growth <= 0:
            self._n0 = 1 << 62
        else:
            self._n0 = max(1, math.ceil((xs[seg + 1] - kv0) / growth))
        if excess is not None:
            a, b, end = excess.piece(0)
            self._a0 += cm.scale * a
            self._b0 += cm.scale * b
            self._n0 = min(self._n0, end) if growth > 0 else self._n0
        #: duration of step 0 (s)
        self.first = self._a0

    @staticmethod
    def first_step(cm: CostModel, base: float, kv0: int, paged: Interp, n_seqs: int,
                   excess: ExcessSeries | None, context0: int = 0) -> float:
        """The :attr:`first` of a stretch of these terms, without building the stretch (the
        same floats, formed the same way)."""
        a0 = _first_line(cm, base, kv0, paged, n_seqs, context0)[3]
        if excess is not None:
            a0 += cm.scale * excess.piece(0)[0]
        return a0

    def step(self, j: int) -> float:
        """Duration of step ``j`` (0-based)."""
        cm = self.cm
        t = self.base + self.paged.scalar(self.kv0 + self.growth * j)
        if self.excess is not None:
            t += self.excess.at(j)
        return self.fixed + self._host_b * j + cm.scale * t

    def duration(self, steps: int) -> float:
        """Total duration of the first ``steps`` steps."""
        if steps == 1 or self.growth == 0:
            return steps * self.first
        interp = self.paged
        last_kv = self.kv0 + self.growth * (steps - 1)
        if last_kv > interp.hi or last_kv < interp.lo:
            self.cm.extrapolated += 1
            self.cm._past_paged(self.n_seqs, last_kv)
        excess = self.excess
        if excess is not None:
            self.cm._count_longest(excess.longest0 + excess.growth / excess.n * (steps - 1))
        if steps <= self._n0:
            return steps * self._a0 + self._b0 * (steps - 1) * steps / 2
        return self._segments(steps) if excess is None else self._segments_with_excess(steps)

    def _segments(self, steps: int) -> float:
        """:meth:`duration` summed segment by segment of the paged curve."""
        cm, interp = self.cm, self.paged
        xs, ys, last = interp.xs, interp.ys, interp.last
        total, j = 0.0, 0
        seg = min(max(bisect_right(xs, self.kv0) - 1, 0), last)
        while j < steps:
            if seg < last:
                end = min(steps, max(j + 1, math.ceil((xs[seg + 1] - self.kv0) / self.growth)))
            else:
                end = steps
            slope = (ys[seg + 1] - ys[seg]) / (xs[seg + 1] - xs[seg])
            a = self.fixed + cm.scale * (self.base + ys[seg] + slope * (self.kv0 - xs[seg]))
            b = cm.scale * slope * self.growth + self._host_b
            n = end - j
            total += n * a + b * (j + end - 1) * n / 2
            j = end
            seg = min(seg + 1, last)
        return total

    def _segments_with_excess(self, steps: int) -> float:
        """:meth:`duration` summed over the segments where both the paged curve and the
        excess are linear in the step."""
        cm, interp, excess = self.cm, self.paged, self.excess
        xs, ys, last = interp.xs, interp.ys, interp.last
        total, j = 0.0, 0
        while j < steps:
            seg = min(max(bisect_right(xs, self.kv0 + self.growth * j) - 1, 0), last)
            end = steps
            if seg < last:
                end = min(end, max(j + 1, math.ceil((xs[seg + 1] - self.kv0) / self.growth)))
            ea, eb, e_end = excess.piece(j)  # type: ignore[union-attr]
            end = int(min(end, e_end))
            slope = (ys[seg + 1] - ys[seg]) / (xs[seg + 1] - xs[seg])
            a = self.fixed + self._host_b * j + cm.scale * (
                self.base + ys[seg] + slope * (self.kv0 + self.growth * j - xs[seg]) + ea)
            b = cm.scale * (slope * self.growth + eb) + self._host_b
            n = end - j
            total += n * a + b * (n - 1) * n / 2
            j = end
        return total

    def steps_until(self, elapsed: float, limit: int) -> int:
        """The first step count ``j`` in ``[1, limit]`` whose steps last at least ``elapsed``."""
        # Steps never get shorter, so elapsed / first step bounds the answer from above, and
        # it is usually exact: search only below that guess.
        guess = min(limit, max(1, math.ceil(elapsed / self.first)))
        if self.excess is not None and guess < limit and self.duration(guess) < elapsed:
            # the excess may shrink as contexts grow (a concave grid row): search above
            return self._first_reaching(guess, limit, elapsed)
        if guess == 1 or self.duration(guess - 1) < elapsed:
            return guess
        return self._first_reaching(0, guess - 1, elapsed)  # duration(0) = 0

    def _first_reaching(self, lo: int, hi: int, elapsed: float) -> int:
        """The least ``j`` in ``(lo, hi]`` whose steps last at least ``elapsed``, given
        ``duration(lo) < elapsed <= duration(hi)`` (bisection)."""
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if self.duration(mid) >= elapsed:
                hi = mid
            else:
                lo = mid
        return hi


def _first_line(cm: CostModel, base: float, kv0: int, paged: Interp, n_seqs: int,
                context0: int = 0) -> tuple[float, int, float, float]:
    """(host seconds of step 0, the paged curve's segment at ``kv0``, its slope, the first
    step's seconds without the excess) of a stretch; ``context0``: the context tokens of its
    sequences at step 0 (shared prefixes counted for every sequence)."""
    fixed = cm.fixed + cm.host_per_seq * n_seqs  # the runtime's host time per step
    if context0:
        fixed += cm.host_per_token * context0
    xs, ys = paged.xs, paged.ys
    seg = min(max(bisect_right(xs, kv0) - 1, 0), paged.last)
    slope = (ys[seg + 1] - ys[seg]) / (xs[seg + 1] - xs[seg])
    return fixed, seg, slope, fixed + cm.scale * (base + ys[seg] + slope * (kv0 - xs[seg]))
