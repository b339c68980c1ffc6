"""Run the Triton kernels on the CPU through Triton's interpreter; mark every test ``kernels``.

TRITON_INTERPRET must be set before ``triton`` is imported and before any kernel is defined,
so it is set here, at collection time of this folder.
"""

import os
from pathlib import Path

import pytest

os.environ.setdefault("TRITON_INTERPRET", "1")

HERE = Path(__file__).resolve().parent


@pytest.hookimpl(tryfirst=True)  # before ``-m`` deselects
def pytest_collection_modifyitems(items):
    """Every test in this folder is a ``kernels`` test (``-m "not kernels"`` leaves them out)."""
    for item in items:
        if HERE in item.path.resolve().parents:
            item.add_marker(pytest.mark.kernels)
