"""kernels/cascade_fit.py recovers a fixed cost and a FLOP rate from hand-built times."""

import csv

import pytest

from parrotsim.kernels.cascade_fit import fit, main, prefix_gflop


def test_prefix_flops():
    assert prefix_gflop(64, 6000) == pytest.approx(4 * 64 * 32 * 6000 * 128 / 1e9)


def _rows(fixed: float, tflops: float, g: int) -> list[dict]:
    return [{"G": g, "B": b, "P": p, "S": 0, "t": fixed + prefix_gflop(b, p) / tflops * 1e3}
            for b in (48, 100) for p in (3000, 12000)]


def test_fit_recovers_line():
    got = fit(_rows(20.0, 200.0, 4) + _rows(14.0, 250.0, 8), "t")
    n, a, rate, worst = got[4]
    assert n == 4 and a == pytest.approx(20.0) and rate == pytest.approx(200.0)
    assert worst < 1e-6
    assert got[8][1] == pytest.approx(14.0) and got[8][2] == pytest.approx(250.0)


def test_cli_filters_long_suffixes(tmp_path, capsys):
    rows = _rows(20.0, 200.0, 4) + [{"G": 4, "B": 48, "P": 3000, "S": 1000, "t": 1e6}]
    path = tmp_path / "t.csv"
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, ["G", "B", "P", "S", "t"])
        w.writeheader()
        w.writerows(rows)
    assert main([str(path), "--time", "t"]) == 0
    assert "G=4: 4 shapes: t = 20.0 us + prefix GFLOP / 200 TFLOP/s" in capsys.readouterr().out
