"""The wheel built once per test session from a copy of the checkout (shared by the packaging
tests: the wheel's own contents, and installs at the ends of the dependency ranges)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_ANYWHERE = shutil.ignore_patterns(".venv", ".git", "out", "build", "*.egg-info",
                                   "__pycache__", ".pytest_cache", ".ruff_cache")


def IGNORE(folder: str, names: list[str]) -> set[str]:  # noqa: N802 - a copytree ignore
    """What a copy of the checkout leaves out: environments, caches, build outputs and the
    top-level ``results/`` of simulation runs; committed measurements such as
    ``kernels/results/`` (read by tests, not packaged) are kept."""
    left_out = set(_ANYWHERE(folder, names))
    if Path(folder) == ROOT and "results" in names:
        left_out.add("results")
    return left_out


@pytest.fixture(scope="session")
def wheel(tmp_path_factory) -> Path:
    """A wheel built from a copy of the checkout (the source tree gets no build files)."""
    src = tmp_path_factory.mktemp("src") / "parrotsim"
    shutil.copytree(ROOT, src, ignore=IGNORE)
    dist = tmp_path_factory.mktemp("dist")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                    "-q", "-w", str(dist), str(src)], check=True)
    (found,) = dist.glob("parrotsim-*.whl")
    return found
