"""Several experiments in one pool (``run_sweeps``): the same summaries as one at a time, each
summary written as its last run ends, the heaviest experiment and the longest runs first."""

from __future__ import annotations

import pandas as pd
import pytest

from parrotsim.sim.harness.backends import make_backend
from parrotsim.sim.harness.runner import _longest_first, prepare_sweep, run_experiment, run_sweeps
from parrotsim.sim.harness.summary import SUMMARY_CSV

SMALL = """\
name: small
run:
  workload: {kind: sharegpt, num_requests: 5, rate: 10.0}
sweep:
  workload.num_requests: [5, 30, 10]
"""


@pytest.mark.parametrize("jobs", [1, 2])
def test_one_pool_equals_one_at_a_time(tiny, write_yaml, tmp_path, jobs):
    small = write_yaml(SMALL, "small.yaml")
    alone = [run_experiment(path, tmp_path / "alone" / path.stem, jobs=jobs, progress=False)
             for path in (tiny, small)]
    sweeps = [prepare_sweep(path, tmp_path / "pooled" / path.stem) for path in (tiny, small)]
    done: list[tuple[int, int]] = []
    executor = make_backend("local", jobs)
    try:
        frames = run_sweeps(sweeps, executor, progress=False,
                            on_done=lambda i, frame: done.append((i, len(frame))))
    finally:
        executor.close()
    assert sorted(done) == [(0, 12), (1, 3)]  # once each, with every run
    for path, a, b in zip((tiny, small), alone, frames, strict=True):
        pd.testing.assert_frame_equal(a, b, check_exact=True)
        written = pd.read_csv(tmp_path / "pooled" / path.stem / SUMMARY_CSV)
        pd.testing.assert_frame_equal(written, pd.read_csv(tmp_path / "alone" / path.stem
                                                           / SUMMARY_CSV), check_exact=True)
    assert frames[0].attrs == {"ran": 12, "cached": 0}


def test_the_same_run_in_two_experiments(write_yaml, tmp_path):
    """Two experiments holding one key: each gets its own record and run folder."""
    first = write_yaml(SMALL, "first.yaml")
    second = write_yaml(SMALL.replace("name: small", "name: other"), "second.yaml")
    sweeps = [prepare_sweep(first, tmp_path / "a"), prepare_sweep(second, tmp_path / "b")]
    assert set(sweeps[0].todo) == set(sweeps[1].todo)
    executor = make_backend("local", 2)
    try:
        frames = run_sweeps(sweeps, executor, progress=False)
    finally:
        executor.close()
    for frame, out in zip(frames, ("a", "b"), strict=True):
        assert list(frame["status"]) == ["ok"] * 3
        assert all((tmp_path / out / "runs" / key).is_dir() for key in frame["run_hash"])


def test_heaviest_experiment_and_longest_runs_first(tiny, write_yaml, tmp_path):
    small = write_yaml(SMALL, "small.yaml")
    sweeps = [prepare_sweep(small, tmp_path / "s"), prepare_sweep(tiny, tmp_path / "t")]
    assert sweeps[1].weight > sweeps[0].weight  # 12 runs of 20 calls against 45 calls
    order = _longest_first(sweeps)
    assert [i for i, _, _ in order] == [1] * 12 + [0] * 3
    assert [run.labels["workload.num_requests"] for i, _, run in order if i == 0] == [30, 10, 5]


def test_cached_sweep_is_done_before_any_run(tiny, write_yaml, tmp_path):
    run_experiment(tiny, tmp_path / "t", jobs=1, progress=False)
    small = write_yaml(SMALL, "small.yaml")
    sweeps = [prepare_sweep(tiny, tmp_path / "t"), prepare_sweep(small, tmp_path / "s")]
    done: list[int] = []
    frames = run_sweeps(sweeps, make_backend("local", 1), progress=False,
                        on_done=lambda i, frame: done.append(i))
    assert done == [0, 1]
    assert frames[0].attrs == {"ran": 0, "cached": 12}
