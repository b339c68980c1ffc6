"""Shared helpers for the workload tests: where the read-only facts live (skip if absent)."""

from __future__ import annotations

from pathlib import Path

import pytest

from .shared_data import SHARED_DATA


@pytest.fixture
def parrot_data() -> Path:
    """``../shared/data/parrot`` (the Parrot artifact's facts); skips the test if missing."""
    path = SHARED_DATA / "parrot"
    if not path.is_dir():
        pytest.skip(f"{path} not present")
    return path


@pytest.fixture
def trace_dir() -> Path:
    """``../shared/data/traces`` (public trace samples); skips the test if missing."""
    path = SHARED_DATA / "traces"
    if not path.is_dir():
        pytest.skip(f"{path} not present")
    return path
