"""The GPU session driver and its sweeps, on the CPU (Triton interpreter).

Shape-list parsing, the era grids matching the calibration's, a failing part logged while the
next part runs, and (slow, ~70 s here) the whole session on tiny shapes: every file written,
the later parts reading the table the first part tuned.
"""

import csv
import json
import sys

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

from parrotsim.calibrate import grids  # noqa: E402
from parrotsim.kernels import bench_era, bench_shapes, session  # noqa: E402


def test_default_shapes_are_the_issue_table():
    shapes = bench_shapes.parse_shapes("default")
    assert len(shapes) == 135
    assert {s[:4] for s in shapes} == {(g, b, p, s) for g in (1, 4, 8)
                                       for b in (1, 7, 48, 100, 200)
                                       for p in (500, 3000, 12000) for s in (0, 17, 1000)}
    assert [s[0] for s in shapes[:3]] == [1, 4, 8]  # G fastest: a cut sweep covers every G
    assert not any(s[4] for s in shapes)


def test_shape_spec_forms(tmp_path):
    assert bench_shapes.parse_shapes("4x64x6000x256;8x1,2x100x17r") == [
        (4, 64, 6000, 256, False), (8, 1, 100, 17, True), (8, 2, 100, 17, True)]
    f = tmp_path / "mine.csv"
    f.write_text("G,B,P,S,ragged\n4,48,3000,17,1\n8,7,500,0,\n")
    assert bench_shapes.parse_shapes(str(f)) == [(4, 48, 3000, 17, True), (8, 7, 500, 0, False)]
    f.write_text("G,B,P,S\n4,x,3000,17\n")
    with pytest.raises(ValueError, match=r"mine.csv:2: B: not an integer"):
        bench_shapes.parse_shapes(str(f))
    for bad in ("3x1x100x0", "4x1x100", "4x0x100x0", "4x1x0x0"):
        with pytest.raises(ValueError):
            bench_shapes.parse_shapes(bad)


def test_ragged_suffixes_are_seeded():
    a = bench_shapes.suffixes(50, 17, True, seed=3)
    assert a == bench_shapes.suffixes(50, 17, True, seed=3)
    assert min(a) >= 0 and max(a) <= 34 and len(set(a)) > 5
    assert bench_shapes.suffixes(4, 17, False, seed=3) == [17] * 4


def test_summary_puts_each_paged_miss_down_to_the_read_or_the_kernel():
    """Hand-built rows: at G=8 one B >= 32 shape meets 90 %, one misses where a plain read of
    its bytes reaches only 80 % (the read), one misses where the read reaches 95 % (the
    kernel); a B=7 miss is not counted; SDPA is faster on one shape; the shared-prefix target
    shape is reported; one shape's shared-prefix kernel loses to paged-over-shared by 20 %."""
    def row(b, p, s, paged_pct, read_pct, sdpa=1.05, shared=10.0, paged_shared=30.0):
        return {"G": "8", "B": str(b), "P": str(p), "S": str(s), "paged_us": "10",
                "paged_pct_floor": str(paged_pct), "paged_read_pct_floor": read_pct,
                "sdpa_over_paged": str(sdpa), "shared_us": str(shared),
                "paged_shared_us": str(paged_shared), "shared_pct_floor": "40",
                "speedup_vs_paged_shared": str(paged_shared / shared),
                "shared_read_pct_floor": "", "error": ""}

    rows = [row(48, 3000, 0, 93, "97"), row(48, 500, 0, 60, "80", sdpa=0.9),
            row(100, 3000, 0, 85, "95"), row(7, 500, 0, 20, "30", shared=12, paged_shared=10),
            row(64, 6000, 256, 95, "98")]
    text = bench_shapes.summary(rows)
    assert ("G=8: 2 of 4; of the 2 misses a plain read of the same bytes is under 90 % too on "
            "1, not timed on 0") in text
    assert "torch SDPA faster than paged on 1 of 5 shapes" in text and "lowest 0.900" in text
    assert "B=64, P=6000, S=256, G=8: 40.0 % of floor (a plain read: -), 3.00x" in text
    assert "slower than paged-over-shared on 1 of 5 shapes, by more than 10 % on 1" in text


def test_era_grids_mirror_the_calibration_grids():
    paged = bench_era.paged_points()
    assert sorted(paged) == sorted((p["batch"], p["ctx"]) for p in grids.paged_grid(False))
    coarse = paged[:10]
    assert (1, 128) in coarse and (4, 1024) in coarse and (1, 512) not in coarse  # every other value of each axis first
    shared = bench_era.coarse_first(list(bench_era.SHARED_GRID))
    assert sorted(shared) == sorted((p["batch"], p["prefix"], p["suffix"])
                                    for p in grids.shared_grid(False))


def test_failing_part_is_logged_and_the_next_runs(tmp_path, monkeypatch):
    def broken(budget):
        raise RuntimeError("tile does not fit")

    monkeypatch.setattr(session, "_parts", lambda *a: {"tune": broken,
                                                       "shapes": lambda s: {"shapes": 3}})
    session.main(["--out", str(tmp_path), "--parts", "tune,shapes", "--budget-s", "30",
                  "--in-process"])
    info = json.loads((tmp_path / "session.txt").read_text())
    assert "tile does not fit" in info["parts"]["tune"]["error"]
    assert info["parts"]["shapes"]["result"] == {"shapes": 3}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["session.txt"]
    with pytest.raises(SystemExit):
        session.main(["--out", str(tmp_path), "--parts", "tune,bogus"])


def test_crashed_part_process_is_logged_and_the_next_runs(tmp_path, monkeypatch):
    """A part whose process dies (as after a sticky CUDA error) leaves an error entry."""
    def cmd(args, name, budget):
        if name == "tune":
            return [sys.executable, "-c", "import os; os._exit(3)"]
        code = ("import json, sys; from pathlib import Path; "
                f"Path({str(tmp_path)!r}, 'part_{name}.json').write_text("
                "json.dumps({'result': {'ok': 1}, 'seconds': 0.1, 'device': 'fake'}))")
        return [sys.executable, "-c", code]

    monkeypatch.setattr(session, "_child_cmd", cmd)
    session.main(["--out", str(tmp_path), "--parts", "tune,era", "--budget-s", "60"])
    info = json.loads((tmp_path / "session.txt").read_text())
    assert "exit 3" in info["parts"]["tune"]["error"]
    assert info["parts"]["era"]["result"] == {"ok": 1} and info["device"] == "fake"


def _rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


@pytest.mark.slow
def test_tiny_session_end_to_end(tmp_path, monkeypatch):
    monkeypatch.delenv("PARROTSIM_KERNEL_TABLE", raising=False)
    session.main(["--out", str(tmp_path), "--tiny"])
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["era_paged.csv", "era_shared_pages.csv", "kernel_table.csv",
                     "parrot2023.csv", "session.txt", "shapes.csv"]
    info = json.loads((tmp_path / "session.txt").read_text())
    assert all("error" not in p for p in info["parts"].values()), info["parts"]
    table = _rows(tmp_path / "kernel_table.csv")
    assert {r["kernel"] for r in table} == {"paged", "shared"}
    shapes = _rows(tmp_path / "shapes.csv")
    assert len(shapes) == 5 and all(float(r["paged_us"]) > 0 for r in shapes)
    assert all(float(r["paged_read_us"]) > 0 and float(r["shared_read_us"]) > 0
               for r in shapes)  # a plain read of each kernel's bytes
    chosen = {(r["G"], r["block_n"], r["warps"], r["stages"])
              for r in table if r["kernel"] == "paged"}
    for r in shapes:  # the shape sweep ran with the table the tune part wrote
        splits, tile = r["paged_choice"].split("s/")
        bn, rest = tile.split("x")
        assert (r["G"], bn, *rest.split("w")) in chosen
    assert all(float(r["vllm014_us"]) > 0 for r in _rows(tmp_path / "era_paged.csv"))
    assert float(_rows(tmp_path / "parrot2023.csv")[0]["parrot2023_us"]) > 0
    pages = _rows(tmp_path / "era_shared_pages.csv")
    assert len(pages) == 1 and float(pages[0]["vllm014_shared_over_private"]) > 0
