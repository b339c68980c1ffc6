"""The wheel built once per test session from a copy of the checkout (shared by the packaging
tests: the wheel's own contents, and installs at the ends of the dependency ranges)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
IGNORE = shutil.ignore_patterns(".venv", ".git", "results", "out", "build", "*.egg-info",
                                "__pycache__", ".pytest_cache", ".ruff_cache")


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
