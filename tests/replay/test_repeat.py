"""repeat: a second real replay scored against the first, as compare scores the simulator."""

import shutil
from pathlib import Path

import pandas as pd

from parrotsim.calibrate.replay.repeat import main, repeat_table

DATA = Path(__file__).resolve().parents[2] / "calibrate" / "replay" / "data" / "overload_vllm"


def test_a_replay_against_itself_differs_by_nothing_and_a_slower_copy_by_its_slowdown(tmp_path):
    shutil.copytree(DATA / "runs", tmp_path / "runs")
    same = repeat_table(DATA, tmp_path)
    assert (same.loc["E2E median |diff| %"] == 0).all()
    calls_path = next((tmp_path / "runs").iterdir()) / "calls.parquet"
    calls = pd.read_parquet(calls_path)
    # every call returns 10 % later after it was sent: E2E 10 % longer, TTFT unchanged
    calls["returned"] = calls["sent"] + 1.1 * (calls["returned"] - calls["sent"])
    calls.to_parquet(calls_path)
    slower = repeat_table(DATA, tmp_path)
    assert slower.loc["E2E median |diff| %"].iloc[0] == 10.0
    assert slower.loc["E2E mean diff %"].iloc[0] == 10.0
    assert slower.loc["TTFT median |diff| %"].iloc[0] == 0.0


def test_cli_refuses_replays_without_a_common_run(tmp_path, capsys):
    shutil.copytree(next((DATA / "runs").iterdir()), tmp_path / "runs" / "another-name")
    try:
        main([str(DATA), str(tmp_path)])
    except SystemExit as exc:
        assert "share no replayed run" in str(exc)
    else:
        raise AssertionError("expected SystemExit")
