"""What the project ships beside its code: the example sweep runs (10 small runs, a few
seconds) and each of its sweep axes visibly changes the results (no axis whose values all give
the same numbers); the license pyproject.toml declares is there as a LICENSE file."""

from __future__ import annotations

from pathlib import Path

from parrotsim.sim.harness.experiment import load_experiment
from parrotsim.sim.harness.runner import run_experiment

ROOT = Path(__file__).resolve().parents[2]
METRICS = ["mean_jct", "p90_jct", "normalized_latency"]


def _differ(a, b, by: float = 0.03) -> bool:
    """Some metric of rows ``a`` and ``b`` differs by more than ``by`` (relative)."""
    return any(abs(a[m] / b[m] - 1) > by for m in METRICS)


def test_example_sweep_axes_change_the_results(tmp_path):
    exp = load_experiment(ROOT / "experiments" / "example_sweep.yaml")
    frame = run_experiment(exp, tmp_path, jobs=1, progress=False)
    assert len(frame) == 10 and (frame["status"] == "ok").all()
    axes = [c for c in exp.label_names if c != "seed"]
    for axis in axes:
        others = [c for c in axes if c != axis]
        pairs = 0
        for _, group in frame.groupby(others):
            rows = [r for _, r in group.iterrows()]
            for i, a in enumerate(rows):
                for b in rows[i + 1:]:
                    pairs += 1
                    if axis != "variant":  # a sweep axis must matter at every point
                        assert _differ(a, b), (axis, a[axes].tolist(), b[axes].tolist())
        assert pairs, axis
    # the variants (KV cap or not) differ at least where the engines are loaded
    by_variant = frame.set_index(["variant", *axes[1:]]).sort_index()
    one = by_variant.xs(1, level="cluster.engines")
    assert _differ(one.loc["vllm_cap4096"].iloc[0], one.loc["vllm_uncapped"].iloc[0], 0.3)


def test_declared_mit_license_has_its_file():
    assert 'license = { text = "MIT" }' in (ROOT / "pyproject.toml").read_text()
    text = (ROOT / "LICENSE").read_text()
    assert text.startswith("MIT License")
    assert "Copyright (c) 2026 the parrotsim developers" in text
    assert 'THE SOFTWARE IS PROVIDED "AS IS"' in text
