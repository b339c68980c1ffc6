"""Reading the small fact tables shipped in ``workloads/data`` (CSV, ``#`` comment lines)."""

from __future__ import annotations

import csv
from functools import cache
from importlib import resources


@cache
def read_table(name: str) -> tuple[dict[str, str], ...]:
    """Rows of ``workloads/data/NAME`` as dicts of strings, comment lines skipped."""
    text = resources.files("parrotsim.workloads.data").joinpath(name).read_text()
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.startswith("#")]
    return tuple(csv.DictReader(lines))
