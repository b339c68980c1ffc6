"""`parrotsim calibrate` checks its environment first and names every problem in one message."""

from __future__ import annotations

import pytest

from parrotsim.calibrate import preflight
from parrotsim.cli import main as cli_main

REQS = [("numpy", ">=1.26,<3"), ("pydantic", ">=2.6,<3"), ("torch", ">=2.1"),
        ("triton", ">=3.0")]
H200 = ("NVIDIA H200", (9, 0))


@pytest.mark.parametrize("version,spec,ok", [
    ("2.5.2", ">=1.26,<3", True), ("1.26.0", ">=1.26,<3", True), ("1.25.2", ">=1.26,<3", False),
    ("3.0.0", ">=1.26,<3", False), ("2.11.0+cu130", ">=2.1", True), ("3.0.0rc1", ">=3.0", True),
    ("14.0.0", ">=14.0.1", False), ("2.0", "", True)])
def test_version_ranges(version, spec, ok):
    assert preflight.satisfies(version, spec) is ok


def test_every_problem_in_one_list():
    versions = {"numpy": "2.5.2", "triton": "2.3.1"}  # no pydantic, no torch
    bad, _ = preflight.problems(versions.get, lambda: pytest.fail("no torch: not probed"), REQS)
    assert bad == ["pydantic: not installed (needs >=2.6,<3)",
                   "torch: not installed (needs >=2.1)", "triton 2.3.1: outside >=3.0"]
    text = preflight.message(bad)
    assert text.count("\n  - ") == 3 and "calibrate/profiles/README.md" in text


def test_no_device_and_an_old_device_are_problems():
    versions = {"numpy": "2.5.2", "pydantic": "2.14.4", "torch": "2.11.0", "triton": "3.6.0"}
    bad, _ = preflight.problems(versions.get, lambda: None, REQS)
    assert bad == ["no CUDA device visible to torch (torch.cuda.is_available() is False)"]
    bad, _ = preflight.problems(versions.get, lambda: ("Tesla T4", (7, 5)), REQS)
    assert len(bad) == 1 and "compute capability 7.5" in bad[0]
    bad, found = preflight.problems(versions.get, lambda: H200, REQS)
    assert bad == [] and found == "numpy 2.5.2, torch 2.11.0, triton 3.6.0, NVIDIA H200 (sm_90)"


def test_installed_requirements_include_the_gpu_extra_only():
    names = {name for name, _ in preflight.requirements()}
    assert {"numpy", "pandas", "pydantic", "torch", "triton"} <= names
    assert "ray" not in names and "pytest" not in names


def test_calibrate_without_a_gpu_exits_2_and_writes_nothing(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert cli_main(["calibrate", "--model", "tiny", "--out", "p.yaml"]) == 2
    err = capsys.readouterr().err
    assert "cannot measure here" in err and "--fit-from" in err
    assert list(tmp_path.iterdir()) == []
