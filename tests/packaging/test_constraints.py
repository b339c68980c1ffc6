"""The constraints files pin the two ends of pyproject.toml's dependency ranges and cannot drift.

``constraints/lowest.txt`` pins every runtime dependency at its range's lower bound and
``constraints/highest.txt`` at a release inside its range; both pin the test runner within the
``dev`` extra's range. The slow ``test_bounds.py`` installs each set and runs the CPU tests.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import tomllib
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[2]
CONSTRAINTS = ROOT / "constraints"
TEST_RUNNER = "pytest"


def project_requirements() -> dict[str, Requirement]:
    """Runtime dependencies of pyproject.toml plus the dev extra's test runner, by name."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    reqs = [Requirement(r) for r in project["dependencies"]]
    reqs += [Requirement(r) for r in project["optional-dependencies"]["dev"]
             if canonicalize_name(Requirement(r).name) == TEST_RUNNER]
    return {canonicalize_name(r.name): r for r in reqs}


def read_pins(path: Path) -> dict[str, Version]:
    """``name==version`` lines of a constraints file (comments and blank lines skipped)."""
    pins = {}
    for n, line in enumerate(path.read_text().splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        req = Requirement(line)
        (spec,) = req.specifier
        assert spec.operator == "==", f"{path}:{n}: pin exactly (name==version)"
        pins[canonicalize_name(req.name)] = Version(spec.version)
    return pins


def lower_bound(req: Requirement) -> Version:
    (low,) = [Version(s.version) for s in req.specifier if s.operator == ">="]
    return low


@pytest.mark.parametrize("which", ["lowest", "highest"])
def test_every_dependency_is_pinned_inside_its_range(which):
    reqs, pins = project_requirements(), read_pins(CONSTRAINTS / f"{which}.txt")
    assert set(pins) == set(reqs), f"{which}.txt names {sorted(pins)}, pyproject {sorted(reqs)}"
    for name, req in reqs.items():
        assert req.specifier.contains(pins[name], prereleases=False), (
            f"constraints/{which}.txt: {name}=={pins[name]} is outside pyproject's {req}")


def test_lowest_pins_are_the_lower_bounds():
    pins = read_pins(CONSTRAINTS / "lowest.txt")
    for name, req in project_requirements().items():
        assert pins[name] == lower_bound(req), (
            f"constraints/lowest.txt: {name}=={pins[name]}, but pyproject's lower bound is "
            f"{lower_bound(req)}")


def test_highest_pins_are_not_below_the_lowest():
    low, high = read_pins(CONSTRAINTS / "lowest.txt"), read_pins(CONSTRAINTS / "highest.txt")
    assert all(high[name] >= low[name] for name in low)


def test_a_pin_outside_its_range_is_caught(tmp_path):
    """The check above can fail: a pin below a lower bound is outside the range."""
    (tmp_path / "c.txt").write_text("numpy==1.25.2  # too old\n")
    pin = read_pins(tmp_path / "c.txt")["numpy"]
    assert not project_requirements()["numpy"].specifier.contains(pin)
