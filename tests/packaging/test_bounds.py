"""The project installs and its CPU tests pass at both ends of its dependency ranges.

For each of ``constraints/lowest.txt`` and ``constraints/highest.txt`` (kept equal to
pyproject.toml's bounds by ``test_constraints.py``): a fresh virtual environment gets the
wheel and the test runner from PyPI with those pins as pip constraints, binary wheels only (so
every pinned version must have a wheel for this Python), then a representative subset of the
CPU tests runs against the installed wheel (the simulator, the fitter and validation, the golden
results, workloads, run storage and the CLI, plots; not the Triton kernels, which need torch).
The tests run from a copy of the checkout without its ``parrotsim/`` folder, so ``parrotsim``
is the installed wheel. Both together take about 4-5 minutes on 2 cores (first run: the
downloads; pip's cache serves later ones).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.packaging.conftest import IGNORE, ROOT
from tests.packaging.test_constraints import read_pins

pytestmark = pytest.mark.slow

#: the CPU tests run at each end of the ranges (none of them imports torch)
SUBSET = ["tests/sim", "tests/calibrate", "tests/golden", "tests/workloads",
          "tests/reports/test_plot.py", "tests/experiments/test_store.py",
          "tests/experiments/test_cli.py", "tests/packaging/test_constraints.py"]


def installed_versions(python: Path) -> dict[str, str]:
    """Distribution name (normalized) -> version in the environment of ``python``."""
    probe = ("import importlib.metadata as m, re\n"
             "for d in m.distributions():\n"
             "    print(re.sub(r'[-_.]+', '-', d.metadata['Name']).lower(), d.version)")
    out = subprocess.run([python, "-c", probe], capture_output=True, text=True, check=True)
    return dict(line.split() for line in out.stdout.splitlines())


@pytest.fixture(scope="module")
def checkout_copy(tmp_path_factory) -> Path:
    """The checkout's tests and data, without the ``parrotsim/`` folder (the wheel's)."""
    dst = tmp_path_factory.mktemp("checkout") / "repo"
    shutil.copytree(ROOT, dst, ignore=IGNORE)
    shutil.rmtree(dst / "parrotsim")
    return dst


@pytest.mark.parametrize("which", ["lowest", "highest"])
def test_cpu_tests_pass_at_the_end_of_the_ranges(which, wheel, checkout_copy, tmp_path):
    constraints = ROOT / "constraints" / f"{which}.txt"
    home = tmp_path / "env"
    subprocess.run([sys.executable, "-m", "venv", str(home)], check=True)
    python = home / "bin" / "python"
    install = subprocess.run(
        [python, "-m", "pip", "install", "-q", "--only-binary", ":all:", "-c", str(constraints),
         str(wheel), "pytest"], capture_output=True, text=True, timeout=900)
    assert install.returncode == 0, f"{which}: pip install failed:\n{install.stderr[-3000:]}"
    have = installed_versions(python)
    for name, version in read_pins(constraints).items():
        assert have.get(name) == str(version), f"{which}: {name} {have.get(name)} != {version}"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["MPLBACKEND"] = "Agg"
    tests = subprocess.run(
        [python, "-m", "pytest", "-x", "-p", "no:cacheprovider", "-m", "not slow",
         *SUBSET], cwd=checkout_copy, env=env, capture_output=True, text=True, timeout=900)
    print(which, *[ln for ln in tests.stdout.splitlines() if " passed" in ln])
    assert tests.returncode == 0, f"{which}:\n{tests.stdout[-4000:]}\n{tests.stderr[-2000:]}"
    origin = subprocess.run([python, "-c", "import parrotsim; print(parrotsim.__file__)"],
                            cwd=checkout_copy, env=env, capture_output=True, text=True)
    assert str(home) in origin.stdout, origin.stdout + origin.stderr
