"""``parrotsim compare`` on the committed replays (calibrate/replay/data/*: H200, one H100), as CI's gate.

Each replay folder with a ``bounds.yaml`` is compared with the simulator (the profile named
there) and must stay within its bounds: regression bounds at the errors measured when they
were set (calibrate/replay/README.md), not yet issue 14's targets, which compare prints too.
"""

from pathlib import Path

import pandas as pd
import pytest

from parrotsim.cli import main

DATA = Path(__file__).resolve().parents[2] / "calibrate" / "replay" / "data"
GATED = sorted(p.name for p in DATA.iterdir() if (p / "bounds.yaml").is_file())


def test_every_committed_replay_is_gated():
    assert "sharegpt_vllm" in GATED


@pytest.mark.slow
@pytest.mark.parametrize("name", GATED)
def test_committed_replay_within_its_bounds(name, tmp_path, capsys):
    rc = main(["compare", str(DATA / name), "--bounds", str(DATA / name / "bounds.yaml"),
               "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert rc == 0, out[-2000:]
    table = pd.read_csv(tmp_path / "compare.csv")
    assert len(table) == len(list((DATA / name / "runs").iterdir()))
    assert "issue 14 targets met" in out
    assert (tmp_path / "compare_latency.png").stat().st_size > 0
