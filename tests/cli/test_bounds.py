"""Resource bounds (issue 15): the memory estimate and its limit, the per-run timeout, and the
lock per run key, each on a small hand-built case."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from parrotsim.core.errors import memory_size, seconds
from parrotsim.sim.harness import resources
from parrotsim.sim.harness.config import RunConfig
from parrotsim.sim.harness.experiment import load_experiment
from parrotsim.sim.harness.resources import MemoryLimitError, RunSize, check_memory, estimate
from parrotsim.sim.harness.runner import run_experiment
from parrotsim.sim.harness.store import execute, read_record, run_lock

SLOW = """\
name: slow
run:
  workload: {kind: sharegpt, num_requests: 30000, rate: 50.0}
sweep:
  workload.rate: [50.0, 60.0]
"""


def _config(workload: dict, engines: int = 1) -> RunConfig:
    return RunConfig.model_validate({"workload": workload, "cluster": {"engines": engines}})


def test_sizes_are_counted_without_building_the_whole_workload():
    assert resources.workload_size(_config({"kind": "sharegpt",
                                            "num_requests": 10**9}).workload) == (10**9, 10**9)
    small = _config({"kind": "metagpt", "files": 4, "tasks": 3}).workload
    apps = small.build(np.random.default_rng(0))
    assert resources.workload_size(small) == (3, sum(len(a.calls) for a in apps))
    size = estimate(_config({"kind": "sharegpt", "num_requests": 1000}, engines=10))
    assert size == RunSize(1000, 1000, 10)
    assert size.bytes == (resources.BASE_BYTES + 1000 * resources.CALL_BYTES
                          + 10 * resources.ENGINE_BYTES)


def test_the_limit_counts_the_runs_in_flight_at_once():
    small = RunSize(1, 1, 1)
    check_memory([("a", small), ("b", small)], 2, "exp.yaml", limit=2.1 * small.bytes)
    with pytest.raises(MemoryLimitError, match=r"exp.yaml: workload: the run a needs about "
                                               r".* 2 runs at once need about"):
        check_memory([("a", small), ("b", small)], 2, "exp.yaml", limit=1.5 * small.bytes)
    check_memory([("a", small), ("b", small)], 1, "exp.yaml", limit=1.5 * small.bytes)


def test_size_and_seconds_arguments():
    assert memory_size("4G") == 4 * 2**30 and memory_size("512MiB") == 512 * 2**20
    assert memory_size("1.5gb") == 1.5 * 2**30 and memory_size("none") == math.inf
    assert seconds("0") is None and seconds("2.5") == 2.5


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_run_past_its_timeout_is_recorded_failed(tmp_path: Path, jobs: int):
    (tmp_path / "slow.yaml").write_text(SLOW)
    frame = run_experiment(tmp_path / "slow.yaml", tmp_path / "out", jobs=jobs,
                           progress=False, run_timeout=0.2)
    assert list(frame["status"]) == ["failed", "failed"]
    assert frame["error"].str.contains("timed out after 0.2 s").all()
    for key in frame["run_hash"]:
        trace = (tmp_path / "out" / "runs" / key / "error.txt").read_text()
        assert "RunTimeout: timed out after 0.2 s" in trace


def test_a_locked_key_is_busy_or_reused(tmp_path: Path):
    exp = load_experiment(_write(tmp_path, SLOW.replace("3000", "5")))
    run = exp.runs[0]
    config, runs = run.config.model_dump(mode="json"), tmp_path / "runs"
    other = run_lock(runs, run.key)
    with other:  # another sweep holds the key: do nothing now
        assert execute(run.key, config, str(runs), wait=False)["status"] == "busy"
    first = execute(run.key, config, str(runs), wait=False, reuse=True)
    assert first["status"] == "ok" and not first.get("reused")
    again = execute(run.key, config, str(runs), wait=True, reuse=True)
    assert again["reused"] and again["metrics"] == read_record(runs, run.key)["metrics"]


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "exp.yaml"
    path.write_text(text)
    return path
