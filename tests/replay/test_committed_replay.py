"""``parrotsim compare`` on the committed H200 replay (calibrate/replay/data/sharegpt_vllm).

The error targets of issue 14 are not met yet (the note and calibrate/replay/README.md give the
measured errors and the mechanisms behind them), so this checks that the comparison runs on
every committed run and reports the real and simulated request counts alike; the targets become
assertions when the cost model carries the measured host and decode terms.
"""

from pathlib import Path

import pandas as pd
import pytest

from parrotsim.cli import main

DATA = Path(__file__).resolve().parents[2] / "calibrate" / "replay" / "data" / "sharegpt_vllm"


@pytest.mark.slow
def test_compare_runs_on_the_committed_replay(tmp_path, capsys):
    assert main(["compare", str(DATA), "--out", str(tmp_path)]) == 0
    table = pd.read_csv(tmp_path / "compare.csv")
    assert len(table) == 3
    assert "E2E |sim-real|/real" in capsys.readouterr().out
    assert (tmp_path / "compare_latency.png").stat().st_size > 0
