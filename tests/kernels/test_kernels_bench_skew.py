"""The skewed-batch paged-kernel bench (kernels/bench_skew.py) end to end on the CPU under
Triton's interpreter, at tiny shapes."""

import csv
import json

from parrotsim.kernels.bench_skew import cases, main


def test_cases_hold_one_and_a_quarter_long():
    got = cases((2, 8, 16), (1024,))
    assert got == [(2, 1, 1024, 128), (8, 1, 1024, 128), (8, 2, 1024, 128),
                   (16, 1, 1024, 128), (16, 4, 1024, 128)]


def test_tiny_run_writes_every_kind(tmp_path):
    out = tmp_path / "skew.csv"
    assert main(["--out", str(out), "--tiny"]) == 0
    rows = list(csv.DictReader(out.open()))
    kinds = [r["kind"] for r in rows]
    assert kinds.count("knee") == 3
    assert kinds.count("skew") == kinds.count("mean") == kinds.count("long") == 4
    for r in rows:
        assert float(r["us_median"]) > 0
        if r["kind"] == "skew":
            assert int(r["max_ctx"]) == int(r["longest"])
            assert int(r["kv_tokens"]) == (int(r["k_long"]) * int(r["longest"])
                                           + (int(r["n"]) - int(r["k_long"])) * int(r["short"]))
    meta = json.loads(out.with_suffix(".json").read_text())
    assert meta["kv_heads"] == 2 and meta["sms"] > 0
