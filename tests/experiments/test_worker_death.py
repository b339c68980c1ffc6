"""A worker process that dies takes only its own run down (issue 21).

The plugin's workload kills its worker process (``os._exit``) for one run of a 20-run sweep
while a kill file exists. With ``--jobs 2`` the other 19 runs are stored, the killer's run is
retried once alone on a fresh worker, dies again and fails with a clear reason (the old pool
failed every run still in flight or queued: 13 of 20 in one try); once the kill file is gone a
re-run completes it and takes the 19 from the cache.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[2]

KILLER = '''\
import os
from pathlib import Path
from typing import Literal

from parrotsim.workloads.registry import register_workload
from parrotsim.workloads.sharegpt import ShareGptChat


@register_workload
class KillerChat(ShareGptChat):
    """ShareGPT chat whose build kills the worker process when ``tag == die_on`` and the
    kill file exists."""

    kind: Literal["killer"] = "killer"
    tag: int = 0
    die_on: int = -1
    kill_file: str = ""

    def build(self, rng):
        if self.tag == self.die_on and Path(self.kill_file).exists():
            os._exit(7)
        return super().build(rng)
'''

EXPERIMENT = """\
name: killer
plugins: [killer.py]
run:
  workload: {{kind: killer, num_requests: 20, rate: 10.0, die_on: 7, kill_file: {kill}}}
sweep:
  workload.tag: [{tags}]
"""


def _run(tmp_path: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "parrotsim", "run", "exp.yaml", "--out", "out",
                           "--jobs", "2", "-q"], cwd=tmp_path, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=300)


def runs(tmp_path: Path) -> list[Path]:
    """The published run directories (a worker the broken pool terminated may leave a
    ``.tmp-`` staging directory, which nothing reads)."""
    return [p for p in (tmp_path / "out" / "runs").iterdir() if not p.name.startswith(".")]


def test_dead_worker_fails_only_its_run(tmp_path):
    kill = tmp_path / "KILL"
    kill.touch()
    (tmp_path / "killer.py").write_text(KILLER)
    (tmp_path / "exp.yaml").write_text(EXPERIMENT.format(
        kill=kill, tags=", ".join(str(t) for t in range(20))))
    first = _run(tmp_path)
    assert first.returncode == 1, first.stderr
    frame = pd.read_csv(tmp_path / "out" / "summary.csv")
    failed = frame[frame["status"] == "failed"]
    assert len(frame) == 20 and failed["workload.tag"].tolist() == [7]
    assert failed["error"].iloc[0].startswith(
        "worker lost twice (its process died with this run, also when the run was retried "
        "alone): BrokenProcessPool")
    assert "(not stored: retried next time)" in first.stderr
    stored = {p.name: (p / "summary.json").stat().st_mtime_ns for p in runs(tmp_path)}
    assert set(stored) == set(frame[frame["status"] == "ok"]["run_hash"])  # 19 runs
    kill.unlink()
    second = _run(tmp_path)
    assert second.returncode == 0, second.stderr
    again = pd.read_csv(tmp_path / "out" / "summary.csv")
    assert (again["status"] == "ok").all() and len(again) == 20
    assert {p.name for p in runs(tmp_path)} == set(again["run_hash"])
    assert {p.name: (p / "summary.json").stat().st_mtime_ns for p in runs(tmp_path)
            if p.name in stored} == stored  # the 19 were taken from the cache
