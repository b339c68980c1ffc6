"""The descriptor diagnostic (kernels/bench_desc.py) end to end on the CPU under Triton's
interpreter at tiny shapes: every row is written and the descriptor kernels agree with the
shipped ones."""

import csv

from parrotsim.kernels.bench_desc import main


def test_tiny_run_writes_both_tables(tmp_path):
    assert main(["--out", str(tmp_path), "--reps", "1", "--cascade", "4x2x40x17",
                 "--paged", "8x2x40x0"]) == 0
    (cascade,) = csv.DictReader((tmp_path / "cascade.csv").open())
    (paged,) = csv.DictReader((tmp_path / "paged.csv").open())
    assert cascade["tiles_failed"] == "0" and paged["tiles_failed"] == "0"
    assert float(cascade["err"]) < 5e-2 and float(paged["err"]) < 5e-2
    assert float(cascade["desc_cascade_us"]) > 0 and float(paged["desc_us"]) > 0
    assert float(paged["pdesc_err"]) < 5e-2 and float(paged["page64_err"]) < 5e-2
    assert min(float(paged[k]) for k in ("pdesc_us", "paged_shuffled_us",
                                         "pdesc_shuffled_us", "page64_us")) > 0
