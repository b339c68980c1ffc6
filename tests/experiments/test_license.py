"""The license pyproject.toml declares is shipped as a LICENSE file."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_declared_mit_license_has_its_file():
    assert 'license = { text = "MIT" }' in (ROOT / "pyproject.toml").read_text()
    text = (ROOT / "LICENSE").read_text()
    assert text.startswith("MIT License")
    assert "Copyright (c) 2026 the parrotsim developers" in text
    assert 'THE SOFTWARE IS PROVIDED "AS IS"' in text
