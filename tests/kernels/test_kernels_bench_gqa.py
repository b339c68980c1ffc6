"""The GQA decode benchmark (kernels/bench_gqa.py) end to end on the CPU under Triton's
interpreter at tiny shapes: every file and column is written, variants agree with the default."""

import csv

from parrotsim.kernels.bench_gqa import CASCADE_FIELDS, PAGED_FIELDS, main


def test_tiny_run_writes_every_table(tmp_path):
    assert main(["--out", str(tmp_path), "--reps", "1"]) == 0
    launch = list(csv.DictReader((tmp_path / "launch.csv").open()))
    kinds = [r["kind"] for r in launch]
    assert kinds[:3] == ["empty_1_launch", "empty_2_launches", "empty_1_launch_1024_programs"]
    assert kinds.count("read") == 2 and all(float(r["us"]) > 0 for r in launch)
    cascade = list(csv.DictReader((tmp_path / "cascade.csv").open()))
    paged = list(csv.DictReader((tmp_path / "paged.csv").open()))
    assert len(cascade) == 1 and len(paged) == 1
    for rows, fields in ((cascade, CASCADE_FIELDS), (paged, PAGED_FIELDS)):
        r = rows[0]
        assert r["error"] == ""
        assert all(r[f] != "" for f in fields if f.endswith("_us"))
    assert float(cascade[0]["err_fused_last"]) < 5e-2
    assert float(paged[0]["err_last"]) < 5e-2
    assert float(cascade[0]["prefix_gflop"]) == 4 * 2 * 8 * 40 * 32 / 1e9
    text = (tmp_path / "table.txt").read_text()
    assert "launch floor" in text and "cascade G=4" in text and "paged G=4" in text
