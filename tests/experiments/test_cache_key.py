"""A run is re-run when its code or an input file changes, and only then
(parrotsim.sim.harness.fingerprint)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from parrotsim.sim.harness.fingerprint import source_files
from parrotsim.sim.harness.runner import run_experiment
from parrotsim.sim.model.profile import dump_profile, load_profile

ROOT = Path(__file__).resolve().parents[2]
PROFILE = "a100-80gb_llama-13b"


def _copy_tree(dest: Path) -> Path:
    """The package laid out as a wheel installs it (``parrotsim/<part>/``), as plain files."""
    skip = shutil.ignore_patterns("__pycache__", "*.pyc", "results", "measurements")
    shutil.copytree(ROOT / "parrotsim", dest / "parrotsim", ignore=skip)
    for part in ("sim", "policies", "workloads", "calibrate", "reports", "experiments"):
        shutil.copytree(ROOT / part, dest / "parrotsim" / part, ignore=skip)
    return dest


def _cli(tree: Path, cwd: Path, *args: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    proc = subprocess.run([sys.executable, "-m", "parrotsim", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_code_change_reruns_and_same_code_elsewhere_hits(tmp_path):
    tree = _copy_tree(tmp_path / "tree")
    probe = subprocess.run([sys.executable, "-c",
                            "import parrotsim.sim; print(parrotsim.sim.__file__)"],
                           env={**os.environ, "PYTHONPATH": str(tree)}, cwd=tmp_path,
                           capture_output=True, text=True, check=True)
    assert Path(probe.stdout.strip()) == tree / "parrotsim" / "sim" / "__init__.py"  # the copy
    (tmp_path / "exp.yaml").write_text(
        "name: code\nrun:\n  workload: {kind: sharegpt, num_requests: 20, rate: 10.0}\n")
    _cli(tree, tmp_path, "run", "exp.yaml", "--out", "out", "-j", "1", "-q")
    before = pd.read_csv(tmp_path / "out" / "summary.csv")["throughput"].iloc[0]
    assert "1 runs, 1 cached" in _cli(tree, tmp_path, "run", "exp.yaml", "--out", "out",
                                      "--dry-run")
    metrics = tree / "parrotsim" / "sim" / "model" / "metrics.py"
    text = metrics.read_text()
    assert text.count('"throughput": float(') == 1
    metrics.write_text(text.replace('"throughput": float(', '"throughput": 1000.0 * float('))
    _cli(tree, tmp_path, "run", "exp.yaml", "--out", "out", "-j", "1", "-q")
    after = pd.read_csv(tmp_path / "out" / "summary.csv")["throughput"].iloc[0]
    assert after == pytest.approx(1000.0 * before, rel=1e-12)
    # The same (edited) code in another folder gives the same keys: the results are reused.
    moved = tmp_path / "elsewhere"
    shutil.copytree(tree, moved, ignore=shutil.ignore_patterns("__pycache__"))
    assert "1 runs, 1 cached" in _cli(moved, tmp_path, "run", "exp.yaml", "--out", "out",
                                      "--dry-run")


def test_trace_edit_reruns(write_yaml, tmp_path, monkeypatch, spy):
    monkeypatch.chdir(tmp_path)
    trace = tmp_path / "trace.csv"
    trace.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n"
                     "2023-11-16 18:15:46.68,374,44\n2023-11-16 18:15:50.52,396,109\n")
    exp = write_yaml("name: t\nrun:\n  workload: {kind: trace, path: trace.csv}\n")
    first = run_experiment(exp, tmp_path / "out", jobs=1, progress=False)
    second = run_experiment(exp, tmp_path / "out", jobs=1, progress=False)
    assert len(spy) == 1  # same code and inputs: cached
    pd.testing.assert_frame_equal(first, second)
    trace.write_text(trace.read_text().replace(",109\n", ",900\n"))
    third = run_experiment(exp, tmp_path / "out", jobs=1, progress=False)
    assert len(spy) == 2
    assert third["run_hash"].iloc[0] != first["run_hash"].iloc[0]
    assert third["mean_jct"].iloc[0] > first["mean_jct"].iloc[0]


def test_profile_edit_reruns(write_yaml, tmp_path, monkeypatch, spy):
    monkeypatch.chdir(tmp_path)
    profile = load_profile(PROFILE)
    dump_profile(profile, tmp_path / "gpu.yaml")
    exp = write_yaml("name: p\nrun:\n  workload: {kind: sharegpt, num_requests: 20}\n"
                     "  cluster: {profile: gpu.yaml}\n")
    first = run_experiment(exp, tmp_path / "out", jobs=1, progress=False)
    run_experiment(exp, tmp_path / "out", jobs=1, progress=False)
    assert len(spy) == 1
    curves = profile.curves.model_copy(
        update={"iteration_overhead_s": 2 * profile.curves.iteration_overhead_s + 0.01})
    dump_profile(profile.model_copy(update={"curves": curves}), tmp_path / "gpu.yaml")
    again = run_experiment(exp, tmp_path / "out", jobs=1, progress=False)
    assert len(spy) == 2
    assert again["mean_jct"].iloc[0] > first["mean_jct"].iloc[0]


def test_source_hash_covers_every_module_a_run_imports():
    code = ("import json, sys\nfrom parrotsim.sim.harness.config import RunConfig\nfrom parrotsim.sim.harness.simulation import "
            "simulate\nfrom parrotsim.sim.harness.store import run_key\ncfg = RunConfig.model_validate({'workload':"
            " {'kind': 'sharegpt', 'num_requests': 5}})\nsimulate(cfg); run_key(cfg)\n"
            "print(json.dumps([getattr(m, '__file__', None) for m in list(sys.modules.values())"
            "]))")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, check=True)
    loaded = set()
    for file in json.loads(proc.stdout):
        path = Path(file).resolve() if file else None
        if path and path.is_relative_to(ROOT) and not path.is_relative_to(ROOT / ".venv"):
            loaded.add(path.relative_to(ROOT).as_posix())
    covered = {path.relative_to(ROOT).as_posix() for _, path in source_files()}
    assert "sim/harness/simulation.py" in loaded and "policies/cluster/parrot.py" in loaded
    # the version is in the key itself; calibrate/ only anchors the shipped profiles
    assert loaded - covered == {"parrotsim/__init__.py", "calibrate/__init__.py"}
    assert {"sim/model/data/rtt_ms.csv", "workloads/data/sharegpt_lengths.csv"} <= covered


def test_unreadable_input_file_is_a_file_error(write_yaml, tmp_path, monkeypatch):
    import parrotsim.sim.harness.fingerprint as fingerprint
    from parrotsim.sim.harness.experiment import ExperimentError, load_experiment

    def denied(path):
        raise PermissionError(13, "Permission denied")

    (tmp_path / "trace.csv").write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n")
    monkeypatch.setattr(fingerprint, "file_hash", denied)
    exp = write_yaml(f"name: t\nrun:\n  workload: {{kind: trace, path: {tmp_path}/trace.csv}}\n")
    with pytest.raises(ExperimentError) as info:
        load_experiment(exp)
    assert info.value.lines == [f"{exp}:3:33: workload.path: cannot read input file "
                                f"{tmp_path}/trace.csv: Permission denied"]
