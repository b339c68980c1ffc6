"""--quick keeps the grids' extent, profiles record it with the run's measured rates and a
relative raw path, and validation flags forward passes past the extent."""

from __future__ import annotations

import json

import pytest

from parrotsim.calibrate import grids
from parrotsim.calibrate import validate as val
from parrotsim.calibrate.fit import build_profile, write_profile
from parrotsim.cli import main as cli_main
from parrotsim.sim.model.profile import load_profile
from parrotsim.sim.model.profile_parts import Calibration, Extent
from tests.calibrate import synth

KERNEL_GRIDS = {"linear": grids.linear_grid, "paged": grids.paged_grid,
                "shared": grids.shared_grid, "prefill": grids.prefill_grid}


@pytest.mark.parametrize("section", sorted(KERNEL_GRIDS))
def test_quick_grid_has_fewer_points_and_the_same_corners(section):
    quick, full = KERNEL_GRIDS[section](True), KERNEL_GRIDS[section](False)
    assert len(quick) < len(full)
    for key in full[0]:
        assert max(p[key] for p in quick) == max(p[key] for p in full), key
        assert min(p[key] for p in quick) == min(p[key] for p in full), key
    if section == "prefill":  # long chunks over long contexts, the corner --quick used to miss
        assert {"new": 8192, "ctx": 12288, "chunks": 1} in quick


def test_quick_forward_passes_are_full_ones_and_the_held_out_third_reaches_the_corners():
    quick, full = grids.forward_grid(True, 225_000), grids.forward_grid(False, 225_000)
    assert len(quick) < len(full) and all(p in full for p in quick)
    held = [p for p, h in zip(quick, grids.heldout_flags(quick), strict=True) if h]
    assert {grids.batch_kind(p) for p in held} == {"decode", "prefill", "mixed"}

    def widest(pts, f):
        return max(f(p) for p in pts)

    def prefill_ctx(p):
        return max((c for _, c in grids.parse_prefills(p["prefills"])), default=0)

    def private_decode_ctx(p):
        return 0 if p["prefix"] else p["decode_ctx"]

    for f in (prefill_ctx, private_decode_ctx, lambda p: p["decodes"], lambda p: p["prefix"]):
        assert widest(held, f) == widest(quick, f)


@pytest.fixture(scope="module")
def quick_and_full(tmp_path_factory):
    out = {}
    for quick in (True, False):
        raw = synth.write_raw(tmp_path_factory.mktemp("raw"), quick=quick)
        out[quick] = build_profile(raw, "q" if quick else "full")
    return out


def test_profile_records_the_extent_of_what_was_measured(quick_and_full):
    (quick, _, _), (full, _, _) = quick_and_full[True], quick_and_full[False]
    assert quick.calibration.extent == full.calibration.extent == Extent(
        batch_tokens=8192, prefill_chunk_tokens=8192, prefill_context=12288, decode_batch=256,
        decode_context=16384, shared_prefix=16384, shared_batch=256)
    ext, c = quick.calibration.extent, quick.curves
    # the curves end where the extent does, so extrapolating is going past the extent
    assert (c.linear.x[-1], c.prefill_attention_grid.x[-1], c.prefill_attention_grid.y[-1],
            c.decode_paged_grid.x[-1], c.decode_paged_grid.y[-1], c.shared_prefix.x[-1],
            c.shared_prefix.y[-1]) == (ext.batch_tokens, ext.prefill_chunk_tokens,
                                       ext.prefill_context, ext.decode_batch, ext.decode_context,
                                       ext.shared_prefix, ext.shared_batch)


def test_quick_profile_predicts_the_full_forward_set(quick_and_full):
    (quick, _, _), (_, points, _) = quick_and_full[True], quick_and_full[False]
    rows = val.evaluate(quick, points, None)
    assert not val.past_extent(rows)
    summary = val.summarize(rows)["all"]
    assert summary["median"] < 0.005 and summary["worst"] < 0.02


def test_measured_rates_and_a_raw_path_relative_to_the_profile(tmp_path):
    raw = synth.write_raw(tmp_path / "measurements" / "h200_x", quick=True)
    env = json.loads((raw / "env.json").read_text())
    env["ceilings"] = {"stream_read_TBs": 4.571, "gemm_bf16_8192_TFLOPs": 793.6}
    (raw / "env.json").write_text(json.dumps(env))
    out = tmp_path / "profiles" / "h200_x.yaml"
    prof, points, _ = build_profile(raw, "h200_x", out)
    write_profile(prof, points, out)
    back = load_profile(str(out))
    assert back.environment["raw_measurements"] == "../measurements/h200_x"
    assert (out.parent / back.environment["raw_measurements"] / "raw.csv").is_file()
    assert back.calibration.stream_read_tb_s == 4.571
    assert back.calibration.gemm_bf16_tflops == 793.6
    assert (back.gpu.hbm_tb_s, back.gpu.bf16_tflops) == (4.8, 989)  # datasheet, for projection
    assert str(tmp_path) not in out.read_text()


def test_shipped_profiles_have_no_calibration_block_and_load():
    for name in ("h200_llama-7b", "a100-80gb_llama-13b", "a6000_llama-7b-interim"):
        assert load_profile(name).calibration is None


def test_validate_warns_once_about_points_past_the_extent(quick_and_full, tmp_path, capsys):
    prof, points, _ = quick_and_full[True]
    small = Extent(**{**prof.calibration.extent.model_dump(), "prefill_context": 2048})
    narrow = prof.model_copy(update={
        "calibration": Calibration(extent=small),
        "curves": prof.curves.model_copy(update={
            "prefill_attention_grid": prof.curves.prefill_attention_grid.model_copy(update={
                "y": [0.0, 2048.0],
                "seconds": [row[:2] for row in prof.curves.prefill_attention_grid.seconds]})})})
    out = tmp_path / "narrow.yaml"
    write_profile(narrow, points, out)
    assert cli_main(["validate", str(out), "--all"]) == 0
    got = capsys.readouterr()
    warnings = [ln for ln in got.err.splitlines() if ln.startswith("warning:")]
    assert len(warnings) == 1, got.err
    assert "prefill_context 12,000 (measured up to 2,048)" in warnings[0]
    long_ctx = [ln for ln in got.out.splitlines() if ln.startswith("prefill 256@12000")]
    assert long_ctx and long_ctx[0].endswith("* past the measured extent")
    assert "within the measured extent" in got.out
