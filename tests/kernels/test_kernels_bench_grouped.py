"""The several-prefixes benchmark (kernels/bench_grouped.py) end to end at a tiny case under the
interpreter: every column written, the grouped kernel equal to its per-group composition."""

import csv

from parrotsim.kernels.bench_grouped import FIELDS, main


def test_tiny_case_writes_every_column(tmp_path):
    assert main(["--out", str(tmp_path), "--reps", "1"]) == 0
    rows = list(csv.DictReader((tmp_path / "grouped.csv").open()))
    assert len(rows) == 1 and all(rows[0][f] != "" for f in FIELDS)
    assert float(rows[0]["err"]) < 5e-2 and int(rows[0]["batch"]) == 4
