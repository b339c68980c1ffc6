"""The cascade overlap sweep (kernels/bench_cascade_overlap.py) end to end on the CPU under
Triton's interpreter at a tiny shape, on a grid of one prefix tile and two suffix tiles: every
variant is written and agrees with the shipped kernel."""

import csv

import pytest

from parrotsim.kernels import bench_cascade_overlap as bench


@pytest.mark.slow  # ~40 s under the interpreter
def test_tiny_run_writes_every_variant(tmp_path, monkeypatch):
    tiny = bench.Grid(suffix_tiles=((32, 2, 2), (64, 4, 2)), suffix_splits=(1, 2), top=2,
                      prefix_tiles=((64, 64, 4, 2),), prefix_splits=(2,), orders=(False, True))
    monkeypatch.setitem(bench.GRIDS, "fine", (tiny, "4x2x40x17"))
    assert bench.main(["--out", str(tmp_path), "--reps", "1", "--shapes", "4x2x40x17",
                       "--grid", "fine"]) == 0
    suffix = list(csv.DictReader((tmp_path / "suffix.csv").open()))
    cascade = list(csv.DictReader((tmp_path / "cascade.csv").open()))
    assert len(suffix) == 4 and not any(r["error"] for r in suffix)
    assert {r["variant"] for r in cascade} == {"shipped_auto", "shipped_concurrent", "desc"}
    desc = [r for r in cascade if r["variant"] == "desc"]
    assert len(desc) == 3 * 2  # the shipped suffix tile and the 2 fastest, both orders
    assert {r["order"] for r in desc} == {"prefix_first", "suffix_first"}
    assert not any(r["error"] for r in cascade)
    assert max(float(r["err"]) for r in cascade) < 5e-2
