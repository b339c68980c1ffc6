"""Error targets for a replay comparison, and the check that a CI gate runs.

:data:`ISSUE_TARGETS` are issue 14's targets for the simulator against a real run (fractions
of the real value). A bounds file (YAML) holds other limits for the same metrics - e.g. the
regression bounds committed beside a replay's data, so that a change which makes the
simulator worse on real traces fails CI even while the issue's targets are not met yet::

    profile: h200_llama-7b-replay     # simulate with this profile (optional)
    bounds: {e2e_median_err: 0.10, e2e_mean_bias: 0.10, preemptions_err: 0.5}

A bound on a ``*_bias`` metric limits its absolute value. ``preemptions_err`` and
``peak_kv_blocks_err`` are ``|sim - real| / real`` of the counts (0 when both are 0).
"""

from __future__ import annotations

import math
from pathlib import Path

from parrotsim.core.errors import UsageError
from parrotsim.core.text import read_utf8

ISSUE_TARGETS: dict[str, float] = {
    "e2e_median_err": 0.03, "e2e_mean_bias": 0.02, "e2e_p90_bias": 0.05,
    "ttft_median_err": 0.05, "tpot_median_err": 0.03,
    "iter_all_model_vs_cycle_median_err": 0.02,
    "preemptions_err": 0.05, "peak_kv_blocks_err": 0.05,
}


def count_error(real: float, sim: float) -> float:
    """``|sim - real| / real`` of a count; 0 when both are 0, inf when only real is."""
    if real == sim:
        return 0.0
    return abs(sim - real) / real if real else math.inf


def with_count_errors(row: dict[str, float]) -> dict[str, float]:
    """``row`` plus ``preemptions_err`` and ``peak_kv_blocks_err``."""
    return {**row,
            "preemptions_err": count_error(row["real_preemptions"], row["sim_preemptions"]),
            "peak_kv_blocks_err": count_error(row["real_peak_kv_blocks"],
                                              row["sim_peak_kv_blocks"])}


def broken(row: dict[str, float], bounds: dict[str, float]) -> list[str]:
    """The bounds ``row`` breaks, as ``metric value > bound`` lines (NaN breaks a bound)."""
    row = with_count_errors(row)
    out = []
    for metric, bound in bounds.items():
        if metric not in row:
            raise KeyError(f"unknown metric {metric!r} in the bounds")
        value = abs(row[metric]) if metric.endswith("_bias") else row[metric]
        if not value <= bound:
            out.append(f"{metric} {value:.4g} > {bound:.4g}")
    return out


def load_bounds(path: Path) -> tuple[str | None, dict[str, float]]:
    """(profile or None, bounds) of a bounds file; errors name the file and field."""
    from ruamel.yaml import YAML

    try:
        data = YAML(typ="safe", pure=True).load(read_utf8(path))
    except OSError as exc:
        raise UsageError(f"{path}: cannot read the bounds file ({exc.strerror})") from None
    if not isinstance(data, dict) or not isinstance(data.get("bounds"), dict):
        raise UsageError(f"{path}: bounds: expected a mapping of metric: limit")
    bounds = {}
    for metric, value in data["bounds"].items():
        if not isinstance(value, int | float) or isinstance(value, bool) or value < 0:
            raise UsageError(f"{path}: bounds.{metric}: expected a number >= 0, got {value!r}")
        if metric not in ISSUE_TARGETS and not metric.endswith(("_err", "_bias")):
            raise UsageError(f"{path}: bounds.{metric}: not an error metric")
        bounds[metric] = float(value)
    return data.get("profile"), bounds
