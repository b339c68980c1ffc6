"""The paged-decode (sequences x context) table: fitted from raw points, used by the cost model."""

from __future__ import annotations

import json

import pytest

from parrotsim.calibrate import curvefit as cf
from parrotsim.calibrate.fit import build_profile
from parrotsim.calibrate.pagedgrid import fit_paged_grid, paged_waves
from parrotsim.sim.model.costmodel import CostModel, paged_grid_time
from parrotsim.sim.model.profile import load_profile, shipped_profiles
from tests.calibrate.synth import write_raw

LAYERS = 40
BATCHES = (1, 2, 4, 8, 16, 32, 64, 128, 256)
CTXS = (128, 512, 1024, 2048, 4096, 8192, 16384)


def surface_us(b: int, ctx: float) -> float:
    """One layer's kernel (us): affine in context at each batch, batch 16 slower per token,
    not a function of b * ctx alone."""
    per_token = 0.005 * (1.25 if b == 16 else 1.0) * (1 + 2 / b)
    return 3.0 + 0.2 * b ** 0.8 + per_token * b * ctx


def raw_rows(skip: tuple[tuple[int, int], ...] = ()) -> list[dict]:
    rows = [{"section": "paged", "status": "ok", "batch": b, "ctx": c,
             "us_median": surface_us(b, c)}
            for b in BATCHES for c in CTXS if b * c <= 1 << 20 and (b, c) not in skip]
    rows.append({"section": "paged", "status": "oom", "batch": 4, "ctx": 2048})
    return rows


def test_fit_recovers_synthetic_surface():
    grid, rms, filled = fit_paged_grid(raw_rows(skip=((4, 2048),)), LAYERS)
    assert grid is not None and rms < 1e-9
    assert grid.x == list(map(float, BATCHES)) and grid.y == [0.0, *map(float, CTXS)]
    # filled: past 1M KV tokens (extended linearly) and the point that ran out of memory
    assert filled == ["4x2048", "128x16384", "256x8192", "256x16384"]
    for b in BATCHES:  # exact at every grid batch: measured, filled, between and below contexts
        for ctx in (50, 129, 2048, 3000, 16384):
            want = LAYERS * 1e-6 * surface_us(b, ctx)
            assert paged_grid_time(grid, b, b * ctx) == pytest.approx(want, rel=1e-9)
    # between grid batches: log-log in the sequence count, close to the surface
    for b in (3, 6, 48, 100):
        want = LAYERS * 1e-6 * surface_us(b, 2000)
        assert paged_grid_time(grid, b, b * 2000) == pytest.approx(want, rel=0.03)


def test_too_few_points_no_grid():
    rows = [r for r in raw_rows() if r["batch"] == 8]
    assert fit_paged_grid(rows, LAYERS)[0] is None


def test_non_monotone_row_made_monotone():
    rows = raw_rows()
    for r in rows:
        if r["batch"] == 2 and r["ctx"] == 1024:
            r["us_median"] = 1e3  # a glitch: slower than 2048 tokens
    grid, _, _ = fit_paged_grid(rows, LAYERS)
    row = grid.seconds[grid.x.index(2.0)]
    assert all(b >= a for a, b in zip(row, row[1:], strict=False))


@pytest.mark.skipif("h200_llama-13b" not in shipped_profiles(), reason="no measured profile")
def test_shipped_13b_batch16_slower_than_1d_curve():
    """The measured tail wave at 16 sequences: the grid gives more time there than the KV-only
    curve, and the batch-8 and -32 neighbours stay close to it."""
    prof = load_profile("h200_llama-13b")
    c = prof.curves
    assert c.decode_paged_grid is not None
    cm = CostModel(prof, "none")
    kv = 16 * 4097
    one_d = cf.curve_at(kv, c.decode_paged.x, c.decode_paged.seconds)
    assert cm.paged_time(16, kv) > 1.1 * one_d
    assert cm.paged_time(8, kv) == pytest.approx(one_d, rel=0.12)
    assert cm.paged_time(32, kv) == pytest.approx(one_d, rel=0.12)


OCCUPANCY = {"capability": "9.0", "triton": "3.6.0", "warps": 4,
             "split": {"regs": 255, "smem": 23552, "programs_per_sm": 2}}


def test_waves_from_the_runs_sm_count_and_the_kernels_occupancy():
    grid, _, _ = fit_paged_grid(raw_rows(), LAYERS)
    waves, note = paged_waves({"sms": 132, "paged_occupancy": OCCUPANCY}, grid)
    assert (waves.sms, waves.programs_per_sm) == (132, 2)
    assert "255 registers x 128 threads" in note and "sm_90" in note
    # older runs without the occupancy, or no grid: no skewed-batch term, and the note says so
    waves, note = paged_waves({"sms": 132}, grid)
    assert waves is None and "no paged_occupancy" in note
    assert paged_waves({"sms": 132, "paged_occupancy": OCCUPANCY}, None)[0] is None


def test_waves_refused_on_a_row_that_falls_with_the_context():
    grid, _, _ = fit_paged_grid(raw_rows(), LAYERS)
    seconds = [list(r) for r in grid.seconds]
    seconds[2][3] = seconds[2][4] * 2  # batch 4: 1024 tokens slower than 2048
    bad = grid.model_copy(update={"seconds": seconds})
    waves, note = paged_waves({"sms": 132, "paged_occupancy": OCCUPANCY}, bad)
    assert waves is None and "row of 4 sequences falls" in note


def test_the_fit_writes_waves_from_env_json(tmp_path):
    raw = write_raw(tmp_path / "raw")
    env = json.loads((raw / "env.json").read_text())
    prof, _, _ = build_profile(raw, "synth")
    assert prof.curves.decode_paged_waves is None  # env.json without the occupancy
    env["paged_occupancy"] = OCCUPANCY
    (raw / "env.json").write_text(json.dumps(env))
    prof, _, _ = build_profile(raw, "synth")
    assert prof.curves.decode_paged_waves.programs_per_sm == 2
    assert prof.curves.decode_paged_waves.sms == env["sms"]
    assert "2 programs fit an SM" in prof.environment["decode_paged_waves"]
