"""Load-time checks of a cost profile beyond its fields: every iteration takes a positive time.

Field validation (:mod:`parrotsim.sim.model.profile`) makes every number finite and every
measured second non-negative, but the cost model (:mod:`parrotsim.sim.model.costmodel`) extends
its piecewise-linear curves linearly past their ends and adds them up, so a profile can still
yield iterations of zero or negative length: a curve that falls past its last point turns
negative for long batches, and zero overheads with curves starting at 0 s make a one-token
iteration free. Either would stop the simulated clock. :func:`iteration_time_problems` bounds
from below the time of any iteration, per runtime, from each curve's smallest value over the
quantities an iteration can have (at least 1 token through the linear layers, at least 1 unit
of prefill attention work, at least 0 KV tokens read); the optional 2-D grids are never
negative (they are clamped at 0 or interpolated in log space) and are counted as 0.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from parrotsim.sim.model.profile import Profile
    from parrotsim.sim.model.profile_parts import Curve, Runtime

#: the curves a 1-D iteration cost uses, and the smallest quantity each is evaluated at
DOMAINS = {"linear": 1.0, "decode_paged": 0.0, "prefill_attention": 1.0}


def _at(xs: list[float], ys: list[float], x: float) -> float:
    """The curve at ``x``: linear between points, extended linearly past both ends."""
    i = min(max(bisect_right(xs, x) - 1, 0), len(xs) - 2)
    return ys[i] + (ys[i + 1] - ys[i]) * (x - xs[i]) / (xs[i + 1] - xs[i])


def curve_floor(curve: Curve, lo: float) -> float:
    """The smallest seconds of ``curve`` over ``x >= lo`` (``-inf`` when it falls past its
    last point, where the linear extension decreases without bound)."""
    xs, ys = curve.x, curve.seconds
    if ys[-1] < ys[-2]:
        return -math.inf
    return min([_at(xs, ys, lo), *(y for x, y in zip(xs, ys, strict=True) if x >= lo)])


def iteration_time_problems(profile: Profile, default: Runtime) -> list[str]:
    """``field: message`` lines for a profile some of whose iterations would take no time,
    negative time or a non-finite time (empty when every iteration takes a positive time);
    ``default`` is the runtime of engines whose runtime the profile does not list."""
    c = profile.curves
    floors = {name: curve_floor(getattr(c, name), lo) for name, lo in DOMAINS.items()}
    problems = [f"curves.{name}: falls past its last point (x = {getattr(c, name).x[-1]:g}), so "
                "its linear extension makes long iterations take negative time"
                for name, floor in floors.items() if floor == -math.inf]
    if problems:
        return problems
    paged = 0.0 if c.decode_paged_grid is not None else floors["decode_paged"]
    attention = floors["prefill_attention"]
    if c.prefill_attention_grid is not None:
        attention = max(attention, 0.0)  # an iteration takes the larger of curve and grid
    model = c.iteration_overhead_s + floors["linear"]
    runtimes = {**profile.runtimes, "(default)": default}
    for name, rt in runtimes.items():
        decode = rt.overhead_s + rt.scale * (model + paged)
        prefill = rt.prefill_overhead_s + rt.prefill_scale * (model + attention + min(paged, 0.0))
        floor = min(decode, prefill)
        if not floor > 0 or not math.isfinite(floor):
            problems.append(
                f"curves: an iteration of runtime {name!r} can take {floor:.3g} s (the overheads "
                "plus the curves' smallest values); every iteration must take a positive time")
    return problems
