"""The cascade tile sweep (kernels/bench_cascade_tiles.py) end to end on the CPU under Triton's
interpreter at a tiny shape: every tiling agrees with the default's output and is summarised."""

import csv

from parrotsim.kernels.bench_cascade_tiles import CPU_GRID, GRID, main, variants


def test_grid_is_every_combination():
    assert len(variants(GRID)) == 2 * 2 * 2 * 3 * 4
    assert len({tuple(v.values()) for v in variants(GRID)}) == 96


def test_tiny_sweep_agrees_with_the_default(tmp_path):
    assert main(["--out", str(tmp_path), "--reps", "1"]) == 0
    rows = list(csv.DictReader((tmp_path / "tiles.csv").open()))
    assert [r["variant"] for r in rows] == ["paged_shared", "default"] + ["tiled"] * len(
        variants(CPU_GRID))
    assert all(r["error"] == "" and float(r["us"]) > 0 for r in rows)
    assert all(float(r["err"]) < 5e-2 for r in rows if r["variant"] != "paged_shared")
    assert "G=4 B=2 P=40 S=17: paged over shared pages" in (tmp_path / "best.txt").read_text()
