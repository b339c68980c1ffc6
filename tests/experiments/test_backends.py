"""Serial, local pool and Ray backends produce identical summaries."""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd
import pytest

from parrotsim.sim.harness.runner import run_experiment

ROOT = Path(__file__).resolve().parents[2]


def _sorted(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.sort_values("run_hash", kind="stable").reset_index(drop=True)


def test_serial_equals_parallel(tiny, tmp_path):
    serial = run_experiment(tiny, tmp_path / "serial", jobs=1, progress=False)
    parallel = run_experiment(tiny, tmp_path / "parallel", jobs=2, progress=False)
    pd.testing.assert_frame_equal(_sorted(serial), _sorted(parallel), check_exact=True)
    for key in serial["run_hash"]:
        a = pd.read_parquet(tmp_path / "serial" / "runs" / key / "calls.parquet")
        b = pd.read_parquet(tmp_path / "parallel" / "runs" / key / "calls.parquet")
        pd.testing.assert_frame_equal(a, b, check_exact=True)


def test_ray_equals_local(tiny, tmp_path):
    ray = pytest.importorskip("ray")
    local = run_experiment(tiny, tmp_path / "local", jobs=2, progress=False)
    pythonpath = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             runtime_env={"env_vars": {"PYTHONPATH": pythonpath}})
    try:
        remote = run_experiment(tiny, tmp_path / "ray", backend="ray", progress=False)
    finally:
        ray.shutdown()
    pd.testing.assert_frame_equal(_sorted(local), _sorted(remote), check_exact=True)
    assert sorted(p.name for p in (tmp_path / "ray" / "runs").iterdir()) == \
        sorted(set(local["run_hash"]))
