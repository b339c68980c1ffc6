"""The results store: cache hits, killed runs, failed runs, --force."""

from __future__ import annotations

import json
import socket
import subprocess
import sys

import pandas as pd

from parrotsim.cli import main
from parrotsim.sim.harness.experiment import expand, load_experiment
from parrotsim.sim.harness.runner import run_experiment
from parrotsim.sim.harness.store import MARKER, TABLES, read_record


def test_layout_and_summary_columns(tiny, tmp_path, spy):
    out = tmp_path / "out"
    frame = run_experiment(tiny, out, jobs=1, progress=False)
    runs = expand(load_experiment(tiny))
    assert len(spy) == len(runs) == len(frame)
    assert list(frame.columns[:6]) == ["run_hash", "status", "variant", "cluster.engines",
                                       "cluster.scheduler.policy", "seed"]
    for col in ("mean_jct", "throughput", "error", "workload.rate", "cluster.engine.policy"):
        assert col in frame.columns
    assert (frame["status"] == "ok").all()
    assert frame["run_hash"].tolist() == [r.key for r in runs]
    key = runs[0].key
    files = {p.name for p in (out / "runs" / key).iterdir()}
    assert files == {f"{t}.parquet" for t in TABLES} | {"config.json", MARKER}
    calls = pd.read_parquet(out / "runs" / key / "calls.parquet")
    assert len(calls) == 20
    meta = json.loads((out / "runs" / key / "config.json").read_text())
    assert meta["config"] == runs[0].config.model_dump(mode="json")
    csv = pd.read_csv(out / "summary.csv")
    parquet = pd.read_parquet(out / "summary.parquet")
    assert len(csv) == len(parquet) == len(frame)
    assert parquet["mean_jct"].tolist() == frame["mean_jct"].tolist()
    assert not [p for p in (out / "runs").iterdir() if p.name.startswith(".")]


def test_second_run_is_cached(tiny, tmp_path, spy):
    out = tmp_path / "out"
    first = run_experiment(tiny, out, jobs=1, progress=False)
    n = len(spy)
    mtimes = {p: p.stat().st_mtime_ns for p in (out / "runs").rglob("*.parquet")}
    second = run_experiment(tiny, out, jobs=1, progress=False)
    assert len(spy) == n  # nothing simulated again
    assert mtimes == {p: p.stat().st_mtime_ns for p in (out / "runs").rglob("*.parquet")}
    pd.testing.assert_frame_equal(first, second, check_exact=True)
    run_experiment(tiny, out, jobs=1, progress=False, force=True)
    assert len(spy) == 2 * n


def test_killed_run_is_redone_and_partial_files_not_read(tiny, tmp_path, spy):
    out = tmp_path / "out"
    runs = expand(load_experiment(tiny))
    run_experiment(tiny, out, jobs=1, progress=False)
    victim, other = runs[0].key, runs[1].key
    # A run directory without its completion marker, holding a half-written table ...
    (out / "runs" / victim / MARKER).unlink()
    (out / "runs" / victim / "calls.parquet").write_bytes(b"PAR1 half written")
    # ... and a staging directory of a killed worker with a corrupt marker.
    proc = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    stage = out / "runs" / f".tmp-{other}-{socket.gethostname()}-{proc.stdout.strip()}-abcd1234"
    stage.mkdir()
    (stage / MARKER).write_text("{not json")
    assert read_record(out / "runs", victim) is None
    spy.configs.clear()
    frame = run_experiment(tiny, out, jobs=1, progress=False)
    assert [c.model_dump() for c in spy.configs] == [runs[0].config.model_dump()]
    assert (frame["status"] == "ok").all()
    assert len(pd.read_parquet(out / "runs" / victim / "calls.parquet")) == 20
    assert not stage.exists()


def test_failed_run_is_recorded_and_retried(tiny, tmp_path, spy, capsys):
    out = tmp_path / "out"
    spy.fail = lambda cfg: cfg.cluster.engines == 2 and cfg.seed == 1
    assert main(["run", str(tiny), "--out", str(out), "-j", "1", "-q"]) == 1
    frame = pd.read_csv(out / "summary.csv")
    failed = frame[frame["status"] == "failed"]
    assert len(failed) == 4 and (frame["status"] == "ok").sum() == 8
    assert (failed["error"] == "RuntimeError: boom").all()
    assert failed["mean_jct"].isna().all()
    key = failed["run_hash"].iloc[0]
    assert "Traceback" in (out / "runs" / key / "error.txt").read_text()
    assert read_record(out / "runs", key)["status"] == "failed"
    assert "failed" in capsys.readouterr().err
    spy.configs.clear()
    spy.fail = lambda cfg: False
    assert main(["run", str(tiny), "--out", str(out), "-j", "1", "-q"]) == 0
    assert len(spy) == 4  # only the failed runs ran again
    assert (pd.read_csv(out / "summary.csv")["status"] == "ok").all()


def test_duplicate_configs_run_once(write_yaml, tmp_path, spy):
    path = write_yaml("""\
        name: dup
        run: {workload: {kind: sharegpt, num_requests: 20, rate: 4.0}}
        variants:
          a: {}
          b: {workload.rate: 4}
        """)
    frame = run_experiment(path, tmp_path / "out", jobs=1, progress=False)
    assert len(frame) == 2 and frame["run_hash"].nunique() == 1
    assert len(spy) == 1
