"""``parrotsim run`` and ``parrotsim show`` end to end (in-process, serial)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from parrotsim.cli import main

ROOT = Path(__file__).resolve().parents[2]


def test_dry_run_lists_runs_and_writes_nothing(tiny, tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["run", str(tiny), "--out", str(out), "--dry-run"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("tiny: 12 runs, 0 cached")
    assert len(lines) == 13 and all(" todo " in ln for ln in lines[1:])
    assert "variant=capped  cluster.engines=1  cluster.scheduler.policy=least_queue  seed=0" \
        in lines[1]
    assert not out.exists()
    assert main(["run", str(tiny), "--out", str(out), "-j", "1", "-q"]) == 0
    capsys.readouterr()
    assert main(["run", str(tiny), "--out", str(out), "--dry-run"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("tiny: 12 runs, 12 cached")
    assert all(" cached " in ln for ln in lines[1:])


def test_default_out_dir_and_progress_bar(tiny, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["run", str(tiny), "-j", "1"]) == 0
    assert (tmp_path / "results" / "tiny" / "summary.csv").is_file()
    assert capsys.readouterr().err == ""  # stderr is not a terminal: no bar
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    assert main(["run", str(tiny), "-j", "1", "--force"]) == 0
    err = capsys.readouterr().err
    assert "tiny: 100%" in err and "12/12" in err and "ran 12, cached 0, failed 0" in err
    assert main(["run", str(tiny), "-j", "1"]) == 0
    assert "ran 0, cached 12, failed 0" in capsys.readouterr().err


def test_show_into_a_closed_pipe_exits_quietly(tiny, tmp_path):
    """``parrotsim show DIR | head``: the reader goes away; no BrokenPipeError traceback."""
    out = tmp_path / "out"
    assert main(["run", str(tiny), "--out", str(out), "-j", "1", "-q"]) == 0
    proc = subprocess.Popen([sys.executable, "-m", "parrotsim", "show", str(out)], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    proc.stdout.close()  # nobody reads: the first write finds a broken pipe
    err = proc.stderr.read()
    assert proc.wait(timeout=60) == 141 and err == ""


def test_show(tiny, tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["run", str(tiny), "--out", str(out), "-j", "1", "-q"]) == 0
    capsys.readouterr()
    assert main(["show", str(out)]) == 0
    text = capsys.readouterr().out.splitlines()
    assert text[0].startswith("tiny: 12 runs, 0 failed")
    header = text[1].split()
    assert header[:3] == ["variant", "cluster.engines", "cluster.scheduler.policy"]
    assert "mean_jct" in header and "runs" in header  # two seeds averaged
    assert len(text) == 2 + 6 + 1  # title, header, 2 variants x 3 combos, units
    assert text[2].split()[0] == "capped" and text[3].split()[0] != "capped"  # grouped
    assert main(["show", str(out), "--metrics", "p99_jct,makespan"]) == 0
    header = capsys.readouterr().out.splitlines()[1].split()
    assert header[-3:] == ["p99_jct", "makespan", "runs"]


def test_show_errors(tmp_path, tiny, capsys):
    assert main(["show", str(tmp_path / "nothing")]) == 2
    assert "no summary.csv" in capsys.readouterr().err
    out = tmp_path / "out"
    main(["run", str(tiny), "--out", str(out), "-j", "1", "-q"])
    capsys.readouterr()
    assert main(["show", str(out), "--metrics", "mean_jct,nope"]) == 2
    assert "unknown column(s) nope" in capsys.readouterr().err


def test_example_sweep_is_valid(capsys, tmp_path):
    from parrotsim.sim.harness.experiment import load_experiment

    exp = load_experiment(ROOT / "experiments" / "example_sweep.yaml")
    engines = {r.config.cluster.engines for r in exp.runs}
    rates = {r.config.workload.rate for r in exp.runs}
    caps = {r.config.cluster.engine.capacity_tokens for r in exp.runs}
    assert engines == {1, 2, 4} and rates == {2.0, 8.0}
    assert caps == {4096, None} and len(exp.runs) == 10
    assert {r.config.workload.kind for r in exp.runs} == {"sharegpt"}


@pytest.mark.parametrize("damage", ["garbage_parquet", "truncated_csv", "no_status", "bad_meta",
                                    "empty_csv"])
def test_show_on_a_damaged_results_folder_is_a_clear_error(damage, tiny, tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["run", str(tiny), "--out", str(out), "-j", "1", "-q"]) == 0
    if damage == "garbage_parquet":
        (out / "summary.parquet").write_bytes(b"x")
    else:
        (out / "summary.parquet").unlink()
        if damage == "truncated_csv":
            (out / "summary.csv").write_text((out / "summary.csv").read_text()[:40])
        elif damage == "no_status":
            (out / "summary.csv").write_text("run_hash,mean_jct\nabc,1.0\n")
        elif damage == "empty_csv":
            (out / "summary.csv").write_text("")
        else:
            (out / "experiment.json").write_text("{")
    capsys.readouterr()
    assert main(["show", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("parrotsim: ") and str(out) in err and "Traceback" not in err


@pytest.mark.parametrize("command", ["run", "report"])
def test_out_naming_an_existing_file_is_exit_2_before_anything_runs(command, tiny, tmp_path,
                                                                    capsys):
    target = tmp_path / "taken"
    target.write_text("mine")
    argv = ["run", str(tiny)] if command == "run" else ["report", "--figures", "fig15"]
    with pytest.raises(SystemExit) as info:
        main([*argv, "--out", str(target / "sub" if command == "report" else target)])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "is a file" in err or "not a folder" in err
    assert target.read_text() == "mine"
