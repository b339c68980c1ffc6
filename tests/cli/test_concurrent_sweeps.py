"""Two ``parrotsim run`` into one ``--out`` at once (issue 15): the summary equals one sweep's,
byte for byte, and every run is simulated once (the runs each process ran add up to the sweep)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SWEEP = """\
name: together
run:
  workload: {kind: sharegpt, num_requests: 1000, rate: 4.0}
sweep:
  cluster.engines: [1, 2]
  workload.rate: [2.0, 4.0, 6.0, 8.0, 10.0]
"""


def _start(tmp_path: Path, out: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "parrotsim", "run", "exp.yaml", "--out", out,
                             "-j", "1", "-q"], cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})


@pytest.mark.slow
def test_two_sweeps_into_one_folder(tmp_path: Path):
    (tmp_path / "exp.yaml").write_text(SWEEP)
    both = [_start(tmp_path, "shared"), _start(tmp_path, "shared")]
    outputs = [p.communicate(timeout=600) for p in both]
    assert [p.returncode for p in both] == [0, 0], outputs
    ran = [int(re.search(r"\((\d+) ran, (\d+) cached\)", out).group(1)) for out, _ in outputs]
    assert sum(ran) == 10, outputs  # each run simulated by one of the two only
    assert min(ran) > 0, outputs  # the two did run at once
    alone = _start(tmp_path, "alone")
    assert alone.wait(timeout=600) == 0
    for name in ("summary.csv", "summary.parquet"):
        assert (tmp_path / "shared" / name).read_bytes() == (tmp_path / "alone" / name).read_bytes()
    assert len(list((tmp_path / "shared" / "runs").iterdir())) == 10
