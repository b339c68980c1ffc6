"""The wheel is the whole tool: built from the checkout, installed into a fresh virtual
environment and run from a folder outside the checkout, every command finds its data.

The fresh environment gets the wheel alone (``--no-deps``); the project's dependencies come
from the test environment's site-packages through a path file, so the test needs no network.
Only the coexistence check with the PyPI package named ``kernels`` downloads it, and skips with
a message when the registry cannot be reached.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def venv(wheel, tmp_path_factory) -> Path:
    """A fresh virtual environment holding the installed wheel; returns its bin folder."""
    home = tmp_path_factory.mktemp("venv") / "env"
    subprocess.run([sys.executable, "-m", "venv", str(home)], check=True)
    bin_dir = home / "bin"
    purelib = subprocess.run([bin_dir / "python", "-c",
                              "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             check=True, capture_output=True, text=True).stdout.strip()
    # dependencies from this environment, appended after the fresh site-packages
    Path(purelib, "deps-from-test-env.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    subprocess.run([bin_dir / "python", "-m", "pip", "install", "-q", "--no-deps",
                    "--no-index", str(wheel)], check=True)
    return bin_dir


def run(bin_dir: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return subprocess.run([str(bin_dir / "parrotsim"), *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600)


def test_wheel_installs_only_the_parrotsim_namespace_and_its_data(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/")[0] for n in names}
    print("wheel top-level names:", sorted(tops))
    assert tops == {"parrotsim", wheel.name.split("-py3")[0] + ".dist-info"}
    for data in ["parrotsim/experiments/paper/fig11.yaml", "parrotsim/experiments/example_sweep.yaml",
                 "parrotsim/calibrate/profiles/a100-80gb_llama-13b.yaml",
                 "parrotsim/calibrate/profiles/h200_llama-7b.forward.csv",
                 "parrotsim/workloads/data/arxiv_chunks.csv", "parrotsim/sim/model/data/rtt_ms.csv",
                 "parrotsim/calibrate/measurements/artifact_runs/fig19_runs.csv"]:
        assert data in names


def test_every_command_runs_from_outside_the_checkout(venv, tmp_path):
    where = run(venv, tmp_path, "--version")
    assert where.returncode == 0 and where.stdout.strip().startswith("parrotsim ")
    origin = subprocess.run([venv / "python", "-c", "import parrotsim; print(parrotsim.__file__)"],
                            cwd=tmp_path, capture_output=True, text=True, check=True).stdout
    assert str(venv.parent) in origin and str(ROOT) not in origin
    report = run(venv, tmp_path, "report", "--figures", "fig14a", "--out", "rep", "--quiet",
                 "--jobs", "2")
    assert report.returncode == 0, report.stderr
    assert (tmp_path / "rep" / "fig14a.png").is_file()
    assert (tmp_path / "rep" / "ground_truth.csv").is_file()  # the artifact's runs ship too
    sweep = run(venv, tmp_path, "run", "example_sweep", "--out", "ex", "-q", "--jobs", "2")
    assert sweep.returncode == 0, sweep.stderr
    assert (tmp_path / "ex" / "summary.csv").is_file()
    describe = run(venv, tmp_path, "workloads", "describe", "metagpt", "--files", "4")
    assert describe.returncode == 0 and "metagpt" in describe.stdout, describe.stderr
    validate = run(venv, tmp_path, "validate", "h200_llama-7b", "--no-plot")
    assert validate.returncode == 0, validate.stderr
    assert "median" in validate.stdout.lower()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ex", "rep"]


def test_the_pypi_package_named_kernels_installs_beside_it(venv, tmp_path):
    got = subprocess.run([venv / "python", "-m", "pip", "install", "-q", "kernels"],
                         capture_output=True, text=True, timeout=300)
    if got.returncode != 0:
        pytest.skip(f"could not install 'kernels' from the registry: {got.stderr[-300:]}")
    probe = ("import kernels, parrotsim.kernels as pk, parrotsim.workloads.app; "
             "print(kernels.__file__); print(pk.__file__)")
    out = subprocess.run([venv / "python", "-c", probe], cwd=tmp_path, capture_output=True,
                         text=True)
    assert out.returncode == 0, out.stderr
    theirs, ours = out.stdout.split()
    assert "/kernels/" in theirs and "/parrotsim/kernels/" in ours
