"""host_drift: per-span medians of the host parts of decode-only graph iterations."""

import pandas as pd

from parrotsim.calibrate.replay.host_drift import drift_table, main


def _log() -> pd.DataFrame:
    """20 decode-only graph iterations over 0-10 s whose launch doubles after 5 s, plus a
    prompt iteration and an eager one that must be left out."""
    rows = [dict(start=0.5 * i, prefill_seqs=0, graph=1, decode_seqs=4, sched_s=1e-5,
                 build_s=2e-4, launch_s=1e-4 if i < 10 else 2e-4, post_s=5e-5)
            for i in range(20)]
    rows.append(dict(start=1.0, prefill_seqs=2, graph=0, decode_seqs=0, sched_s=1e-5,
                     build_s=1e-3, launch_s=9e-3, post_s=5e-5))
    rows.append(dict(start=8.0, prefill_seqs=0, graph=0, decode_seqs=4, sched_s=1e-5,
                     build_s=1e-3, launch_s=9e-3, post_s=5e-5))
    return pd.DataFrame(rows)


def test_drift_table_splits_the_run_into_spans():
    table = drift_table(_log(), windows=2)
    assert list(table["iterations"]) == [10, 10]
    assert list(table["launch_s"].round(3)) == [100.0, 200.0]  # us; eager iterations left out
    assert list(table["decode_seqs"]) == [4, 4]


def test_cli_prints_the_launch_ratio(tmp_path, capsys):
    run = tmp_path / "runs" / "r"
    run.mkdir(parents=True)
    _log().to_parquet(run / "iterations.parquet")
    assert main([str(tmp_path), "--windows", "2"]) == 0
    assert "2.00x" in capsys.readouterr().out
