"""Golden summaries: sub-sweeps of shipped experiments re-simulated and compared byte for byte
with ``tests/golden/<case>.csv`` (cases and format in :mod:`tests.golden.cases`).

A refactor must leave every table identical. After a change meant to change results,
regenerate them from the repository root with

    .venv/bin/python -m tests.golden.regenerate          # or: ... regenerate fig18 fig15

and say in the commit which cases changed and why.
"""

from __future__ import annotations

import csv
import io

import pytest

from tests.golden.cases import CASES, golden_path, golden_table


def _rows(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


@pytest.mark.parametrize("case", list(CASES))
def test_summary_is_unchanged(case):
    want = golden_path(case).read_text()
    got = golden_table(case)
    if got == want:
        return
    old, new = _rows(want), _rows(got)
    diffs = [f"columns: {list(old[0])} -> {list(new[0])}"] if old and new and \
        list(old[0]) != list(new[0]) else []
    if len(old) != len(new):
        diffs.append(f"{len(old)} runs pinned, {len(new)} now")
    for i, (a, b) in enumerate(zip(old, new, strict=False)):
        for col in a:
            if a.get(col) != b.get(col):
                diffs.append(f"row {i} ({a.get('variant')}): {col} {a[col]} -> {b.get(col)}")
    pytest.fail(f"{case}: the summary changed (python -m tests.golden.regenerate {case} if "
                "meant):\n" + "\n".join(diffs[:40]))
