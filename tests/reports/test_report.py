"""The report end to end on one small figure, and the headline-claims arithmetic."""

import pandas as pd
import pytest

from parrotsim.cli import main
from parrotsim.reports.build import build_report
from parrotsim.reports.claims import CLAIM_COLUMNS, evaluate
from parrotsim.reports.derive import TIDY_COLUMNS


def test_one_figure_end_to_end(tmp_path):
    claims = build_report(tmp_path, ["fig15"], jobs=1, progress=False)
    assert (tmp_path / "fig15.png").stat().st_size > 10_000
    tidy = pd.read_csv(tmp_path / "figures.csv")
    assert list(tidy.columns) == TIDY_COLUMNS
    assert set(tidy["series"]) == {"parrot", "baseline_with_sharing", "baseline_without_sharing"}
    assert set(tidy["x"]) == {8, 16, 32, 64}
    assert (tidy["unit"] == "s").all() and (tidy["value"] > 0).all()
    page = (tmp_path / "index.html").read_text()
    assert "fig15.png" in page and "Headline claims" in page
    assert "Fig 15: Bing Copilot: average latency with varying batch sizes" in page
    assert set(claims["figure"]) == {"fig15"}
    written = pd.read_csv(tmp_path / "claims.csv", keep_default_na=False)
    assert list(written.columns) == CLAIM_COLUMNS
    assert {"direction_ok", "why", "bound"} <= set(written.columns)
    assert set(written["direction_ok"].astype(str)) <= {"True", "False"}
    misses = written[written["within_15pct"].astype(str) == "False"]
    assert (misses["why"] != "").all()  # every claim outside 15 % says why (or that it's unknown)
    assert "<th>direction</th>" in page and "<th>why</th>" in page
    # a miss with a hand-written why folds its measured detail under the line
    detailed = misses[misses["why_detail"] != ""]
    assert page.count("<summary>measured detail</summary>") == len(detailed)
    # the runs against the artifact's printed ones: Fig 15's 10 points
    truth = pd.read_csv(tmp_path / "ground_truth.csv")
    assert len(truth) == 10 and set(truth["figure"]) == {"fig15"}
    assert (tmp_path / "ground_truth.png").stat().st_size > 10_000
    assert "Against the artifact's own runs" in page and "Of 10 printed points" in page
    # a second build reads every run from the store
    again = build_report(tmp_path, ["fig15"], jobs=1, progress=False)
    pd.testing.assert_frame_equal(claims.reset_index(drop=True), again.reset_index(drop=True))


def test_report_progress_goes_to_stderr(tmp_path, capsys):
    """stdout keeps only the result (the claims table and the last line); progress is on stderr."""
    assert main(["report", "--figures", "fig15", "--out", str(tmp_path), "--jobs", "1"]) == 0
    out, err = capsys.readouterr()
    assert "[report] fig15" in err and "[report]" not in out
    assert out.rstrip().endswith(f"report in {tmp_path}/index.html")
    # the console's table leaves out notes and details; each miss's why is a line of its own
    claims = pd.read_csv(tmp_path / "claims.csv", keep_default_na=False)
    for row in claims[claims["why"] != ""].itertuples():
        assert f"  {row.id}: {row.why}\n" in out
        assert not row.why_detail or row.why_detail not in out


def test_unknown_figure_is_a_usage_error(tmp_path, capsys):
    assert main(["report", "--figures", "fig99", "--out", str(tmp_path), "--quiet"]) == 2
    assert "unknown figure" in capsys.readouterr().err


def test_unknown_profile_family_names_the_ones_shipped(tmp_path, capsys):
    out = tmp_path / "rep"
    assert main(["report", "--figures", "fig11a", "--profile", "a100", "--out", str(out),
                 "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "no shipped profile 'a100_llama-13b' for fig11.yaml" in err
    assert "families with llama-13b: a100-80gb, h100, h200" in err
    assert not out.exists() or not any(out.iterdir())


def _row(figure, series, x, value, panel="", oom=False):
    return {"figure": figure, "panel": panel, "series": series, "x_name": "x", "x": x,
            "metric": "m", "value": value, "unit": "s", "oom": oom}


def test_claims_ratio_tolerance_and_oom_flag():
    tidy = pd.DataFrame([
        _row("fig11a", "baseline_vllm", 25, 138.0), _row("fig11a", "parrot", 25, 100.0),
        _row("fig11a", "baseline_hf", 25, 100.0), _row("fig15", "parrot", 8, 10.0),
        _row("fig15", "baseline_without_sharing", 8, 30.0, oom=True),
    ], columns=TIDY_COLUMNS)
    out = evaluate(tidy).set_index("claim")
    assert out.loc["chain summary, output 25: Parrot vs Baseline (vLLM)", "simulated"] == \
        pytest.approx(1.38)
    assert out.loc["chain summary, output 25: Parrot vs Baseline (vLLM)", "within_15pct"]
    assert not out.loc["chain summary, output 25: Parrot vs Baseline (HF)", "within_15pct"]
    oom_claim = out.loc["Bing, batch 8: vs Baseline w/o Sharing"]
    assert oom_claim["simulated"] == pytest.approx(3.0) and "KV blocks" in oom_claim["note"]
    assert out.loc["chain summary, output 25: Parrot vs Baseline (vLLM)", "note"] == ""


def test_profile_note_names_a_profile_folder(tmp_path, monkeypatch):
    """The report says which profiles ran it: the shipped ones, and those a
    PARROTSIM_PROFILE_DIR folder replaced, by name."""
    from parrotsim.reports.build import profile_note
    monkeypatch.delenv("PARROTSIM_PROFILE_DIR", raising=False)
    assert "PARROTSIM_PROFILE_DIR" not in profile_note(None)
    (tmp_path / "a6000_llama-7b.yaml").write_text("x")
    monkeypatch.setenv("PARROTSIM_PROFILE_DIR", str(tmp_path))
    note = profile_note(None)
    assert f"PARROTSIM_PROFILE_DIR={tmp_path}" in note and note.endswith("a6000_llama-7b.")
    assert profile_note("h200") == "Hardware profiles: h200 family."
