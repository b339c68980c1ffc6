"""The report against the artifact's printed runs: matching on a small hand-built case."""

import numpy as np
import pandas as pd
import pytest

from parrotsim.reports import ground_truth as gt
from parrotsim.reports.html import ground_truth_section


def _summary(rows):
    return pd.DataFrame(rows)


def test_printed_points_meet_the_mean_of_their_simulated_runs(tmp_path):
    # Fig 18's table: two systems, two file counts; Fig 14's: repeated rows per document
    pd.DataFrame({"system": ["parrot", "parrot", "baseline_throughput"],
                  "files": [4, 8, 4], "jct_s": [100.0, 200.0, 50.0],
                  "source": "x"}).to_csv(tmp_path / "fig18_jct.csv", index=False)
    pd.DataFrame({"system": ["parrot"] * 2, "doc": [0, 1], "chunk_size": [1024] * 2,
                  "output_len": [25] * 2, "jct_s": [10.0, 14.0], "source": "x"}).to_csv(
        tmp_path / "fig14_output_len.csv", index=False)
    summaries = {
        "fig18": _summary([
            {"variant": "parrot", "workload.files": 4, "seed": 0, "status": "ok", "mean_jct": 90.0},
            {"variant": "parrot", "workload.files": 4, "seed": 1, "status": "ok", "mean_jct": 120.0},
            {"variant": "parrot", "workload.files": 8, "seed": 0, "status": "error",
             "mean_jct": 1.0},  # a failed run is no evidence: the point is left out
            {"variant": "baseline_throughput", "workload.files": 4, "seed": 0, "status": "ok",
             "mean_jct": 40.0}]),
        "fig14": _summary([  # only chunk 1024 is compared
            {"variant": "parrot", "workload.output_len": 25, "workload.chunk_size": 1024,
             "status": "ok", "mean_jct": 12.0 + d, "workload.docs": f"[{d}]"} for d in (-1, 1)]
            + [{"variant": "parrot", "workload.output_len": 25, "workload.chunk_size": 512,
                "status": "ok", "mean_jct": 99.0, "workload.docs": "[0]"}]),
    }
    table = gt.compare(summaries, tmp_path).set_index(["figure", "series", "setting"])
    assert list(gt.compare(summaries, tmp_path).columns) == gt.COLUMNS
    assert len(table) == 3
    parrot4 = table.loc[("fig18", "parrot", "files 4")]
    assert parrot4["real"] == 100.0 and parrot4["simulated"] == 105.0
    assert parrot4["error_pct"] == pytest.approx(5.0) and parrot4["sim_runs"] == 2
    assert table.loc[("fig18", "baseline_throughput", "files 4"), "error_pct"] == pytest.approx(-20)
    fig14 = table.loc[("fig14", "parrot", "output_len 25")]
    assert fig14["real"] == 12.0 and fig14["simulated"] == 12.0 and fig14["error_pct"] == 0.0
    per = gt.by_figure(gt.compare(summaries, tmp_path)).set_index("figure")
    assert per.loc["fig18", "points"] == 2 and per.loc["fig18", "worst_pct"] == pytest.approx(-20)
    assert per.loc["fig18", "within_10pct"] == 1 and per.loc["fig14", "within_10pct"] == 1
    html = "\n".join(ground_truth_section(gt.compare(summaries, tmp_path)))
    assert "Of 3 printed points, 2 are simulated within 10 %" in html
    assert "ground_truth.png" in html and "ground_truth.csv" in html


def test_no_printed_tables_no_comparison(tmp_path):
    summary = _summary([{"variant": "parrot", "workload.files": 4, "status": "ok",
                         "mean_jct": 1.0}])
    assert gt.compare({"fig18": summary}, tmp_path).empty
    assert gt.compare({"fig11": summary}).empty  # a figure without printed runs


def test_fig19_compares_the_artifact_campaign_only(tmp_path):
    pd.DataFrame({"system": ["parrot"] * 3, "run": [1, 2, 1],
                  "campaign": ["artifact", "artifact", "paper"],
                  "chat_normalized_latency_ms": [100.0, 140.0, 999.0],
                  "chat_decode_time_ms": [40.0, 40.0, 999.0], "mr_jct_s": [20.0, 30.0, 999.0],
                  "source": "x"}).to_csv(tmp_path / "fig19_runs.csv", index=False)
    summary = _summary([{"variant": "parrot", "seed": s, "status": "ok",
                         "chat_normalized_latency": 60.0, "chat_decode_time": 30.0,
                         "mean_jct_map_reduce": 12.5 + s} for s in (0, 1)])
    table = gt.compare({"fig19": summary}, tmp_path).set_index("metric")
    assert table.loc["chat_normalized_latency", "real"] == 120.0
    assert table.loc["chat_normalized_latency", "error_pct"] == pytest.approx(-50.0)
    assert table.loc["mean_jct_map_reduce", "simulated"] == 13.0
    assert set(table["gpu"]) == {gt.A6000} and set(table["sim_runs"]) == {2}


def _point(figure, series, setting, metric, real):
    return {"figure": figure, "series": series, "setting": setting, "metric": metric,
            "real": real}


def test_claims_from_the_printed_runs():
    from parrotsim.reports.rerun_claims import rerun_claims

    truth = pd.DataFrame([
        _point("fig18", "baseline_throughput", "files 16", "mean_jct", 500.0),
        _point("fig18", "parrot", "files 16", "mean_jct", 200.0),
        _point("fig18", "parrot_paged_attention", "files 16", "mean_jct", 250.0),
        _point("fig16", "baseline_with_sharing", "batch 64, output_len 100", "mean_slot_latency",
               30.0),
        _point("fig16", "parrot", "batch 64, output_len 100", "mean_slot_latency", 20.0),
        # Fig 17: Parrot crosses 100 ms/token halfway between 4 and 8 req/s, the baseline
        # between 0.5 and 1; w/ PagedAttention never crosses (no ratio)
        _point("fig17", "parrot", "rate 4", "normalized_latency", 60.0),
        _point("fig17", "parrot", "rate 8", "normalized_latency", 140.0),
        _point("fig17", "baseline_vllm", "rate 0.5", "normalized_latency", 50.0),
        _point("fig17", "baseline_vllm", "rate 1", "normalized_latency", 150.0),
        _point("fig17", "parrot_paged_attention", "rate 1", "normalized_latency", 40.0),
        _point("fig19", "baseline_throughput", "-", "mean_jct_map_reduce", 18.0),
        _point("fig19", "parrot", "-", "mean_jct_map_reduce", 20.0),
    ])
    got = rerun_claims(truth)
    assert got["fig18a.vs_throughput"] == 2.5 and got["fig18a.kernel"] == 1.25
    assert got["fig18a.sharing"] == 2.0 and np.isnan(got["fig18a.vs_latency"])
    assert got["fig16b.out100"] == 1.5 and np.isnan(got["fig16b.out480"])
    assert got["fig17.vs_vllm"] == pytest.approx(6 / 0.75)
    assert np.isnan(got["fig17.vs_paged"]) and np.isnan(got["fig17.wo_sched_vs_vllm"])
    assert got["fig19.mr_vs_throughput"] == 0.9 and np.isnan(got["fig11a.vllm_out25"])
    assert rerun_claims(None) == {}


def test_a_rerun_pointing_the_other_way_is_noted():
    from parrotsim.reports.claims import evaluate
    from parrotsim.reports.derive import TIDY_COLUMNS

    tidy = pd.DataFrame([
        {"figure": "fig19", "panel": "map-reduce JCT", "series": s, "x_name": "system", "x": s,
         "metric": "mean_jct_map_reduce", "value": v, "unit": "s", "oom": False}
        for s, v in (("baseline_throughput", 10.0), ("parrot", 12.0))], columns=TIDY_COLUMNS)
    row = evaluate(tidy, rerun={"fig19.mr_vs_throughput": 0.916}).set_index("id").loc[
        "fig19.mr_vs_throughput"]
    assert row["rerun"] == 0.916 and row["simulated"] == pytest.approx(0.833, abs=1e-3)
    assert "the artifact's own re-run gives 0.92x: it too points the other way" in row["note"]
    plain = evaluate(tidy).set_index("id").loc["fig19.mr_vs_throughput"]
    assert np.isnan(plain["rerun"]) and "re-run" not in plain["note"]


def test_other_hardware_leaves_no_stale_comparison(tmp_path):
    """Under another profile family (not the paper's GPUs) nothing is compared, and the files
    of an earlier build in the same folder go."""
    from parrotsim.reports.build import check_ground_truth

    for name in ("ground_truth.csv", "ground_truth.png"):
        (tmp_path / name).write_text("stale")
    summary = _summary([{"variant": "parrot", "workload.files": 4, "status": "ok",
                         "mean_jct": 1.0}])
    assert check_ground_truth({"fig18": summary}, "h200", tmp_path) is None
    assert not any(tmp_path.iterdir())


def test_summary_counts_and_worst_signed_error():
    """One summary serves the report's section, the CLI line and bench/artifact_runs.py."""
    table = pd.DataFrame({"figure": ["fig14"] * 4 + ["fig17"], "gpu": ["A100"] * 4 + ["A6000"],
                          "error_pct": [-5.0, 9.9, 12.0, -30.0, 25.0]})
    s = gt.summary(table)
    assert s["points"] == 5 and s["within_10pct"] == 2 and s["within_25pct"] == 4
    assert s["median_abs_error_pct"] == pytest.approx(12.0)
    assert s["worst_pct"] == -30.0  # signed: simulated 30 % too fast
    assert gt.summary_line(table) == "5 points, median |error| 12.0 %, 2 within 10 %"
    per = gt.by_figure(table).set_index("figure")
    assert per.loc["fig14", "points"] == 4 and per.loc["fig14", "worst_pct"] == -30.0
    assert per.loc["fig17", "within_10pct"] == 0
