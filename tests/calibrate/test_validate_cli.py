"""``parrotsim validate`` runs on the committed H200 profiles (no GPU, no torch)."""

from __future__ import annotations

import pytest

from parrotsim.cli import main
from parrotsim.sim.model.profile import shipped_profiles

SHIPPED = [n for n in ("h200_llama-7b", "h200_llama-13b") if n in shipped_profiles()]


@pytest.mark.parametrize("name", SHIPPED)
def test_validate_shipped(name, capsys, tmp_path):
    assert main(["validate", name, "--plot", str(tmp_path / "v.png")]) == 0
    out = capsys.readouterr().out
    assert "median |error|" in out and "worst" in out
    for kind in ("all", "decode", "prefill"):
        assert f"\n{kind} " in out
    assert (tmp_path / "v.png").stat().st_size > 0


def test_validate_needs_points(tmp_path, capsys):
    from parrotsim.calibrate.fit import build_profile
    from parrotsim.sim.model.profile import dump_profile
    from tests.calibrate import synth

    prof, _, _ = build_profile(synth.write_raw(tmp_path / "raw"), "nopoints")
    dump_profile(prof, tmp_path / "nopoints.yaml")
    assert main(["validate", str(tmp_path / "nopoints.yaml"), "--no-plot"]) == 2
    assert "forward-pass measurements" in capsys.readouterr().err


def test_calibrate_fit_from(tmp_path, capsys):
    from tests.calibrate import synth

    raw = synth.write_raw(tmp_path / "raw")
    out = tmp_path / "h200_llama-7b.yaml"
    assert main(["calibrate", "--fit-from", str(raw), "--out", str(out)]) == 0
    assert out.is_file() and (tmp_path / "h200_llama-7b.forward.csv").is_file()
    assert "median |error|" in capsys.readouterr().out


def test_validate_writes_nothing_into_the_working_directory(tmp_path, monkeypatch, capsys):
    """The plot is written only where ``--plot FILE`` says."""
    name = SHIPPED[0] if SHIPPED else pytest.skip("no measured profile shipped")
    monkeypatch.chdir(tmp_path)
    assert main(["validate", name]) == 0
    assert list(tmp_path.iterdir()) == [] and "plot:" not in capsys.readouterr().out
    assert main(["validate", name, "--plot", "sub/v.png"]) == 0
    assert (tmp_path / "sub" / "v.png").is_file()
    assert "plot: sub/v.png" in capsys.readouterr().out
