"""A read-only or full ``--out``: exit status 2 with a clear message, the store left consistent.

A read-only folder is a read-only tmpfs where this process may mount one (root, as in CI),
else a folder without write permission (a non-root user); a full disk is a tmpfs of 96 KiB.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from parrotsim.cli import main
from parrotsim.sim.harness.store import read_record

SWEEP = """\
name: sweep
run:
  workload: {kind: sharegpt, num_requests: 6, rate: 2.0}
sweep:
  workload.rate: [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]
"""


def _mount(folder: Path, options: str) -> bool:
    folder.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(folder)],
                          capture_output=True)
    return done.returncode == 0


@pytest.fixture
def read_only(tmp_path):
    folder = tmp_path / "ro"
    if _mount(folder, "size=1m,ro"):
        yield folder
        subprocess.run(["umount", str(folder)], check=True)
    elif os.geteuid() != 0:
        folder.chmod(0o555)
        yield folder
        folder.chmod(0o755)
    else:
        pytest.skip("cannot make a read-only folder here (root without mount)")


@pytest.fixture
def small_disk(tmp_path):
    folder = tmp_path / "small"
    if not _mount(folder, "size=96k"):
        pytest.skip("cannot mount a small tmpfs here")
    yield folder
    subprocess.run(["umount", str(folder)], check=True)


def test_read_only_out_is_exit_2(tmp_path, read_only, capsys):
    (tmp_path / "exp.yaml").write_text(SWEEP)
    for argv in (["run", str(tmp_path / "exp.yaml"), "-j", "1", "-q", "--out"],
                 ["report", "--figures", "fig15", "--quiet", "--out"]):
        assert main([*argv, str(read_only / "out")]) == 2
        err = capsys.readouterr().err
        assert f"{read_only / 'out'}: --out: cannot write into {read_only}" in err, err
    assert list(read_only.iterdir()) == []


def test_full_disk_stops_the_sweep_and_keeps_the_store_whole(tmp_path, small_disk, capsys):
    (tmp_path / "exp.yaml").write_text(SWEEP)
    out = small_disk / "out"
    assert main(["run", str(tmp_path / "exp.yaml"), "--out", str(out), "-j", "1", "-q"]) == 2
    err = capsys.readouterr().err
    assert "No space left on device" in err and "the sweep stopped" in err, err
    stored = [p for p in (out / "runs").iterdir()]
    assert all(not p.name.startswith(".") for p in stored)  # no staging folder left behind
    assert 0 < len(stored) < 8
    for run in stored:  # every run folder left is whole and reads back
        assert read_record(out / "runs", run.name) is not None
    # with room again, a re-run stores only the runs that are missing
    roomy = tmp_path / "roomy"
    subprocess.run(["cp", "-a", str(out), str(roomy)], check=True)
    assert main(["run", str(tmp_path / "exp.yaml"), "--out", str(roomy), "-j", "1", "-q"]) == 0
    assert f"({8 - len(stored)} ran, {len(stored)} cached)" in capsys.readouterr().out
