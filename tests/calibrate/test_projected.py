"""The shipped paper-hardware profiles are projected from measured H200 curves, are marked as
such, and meet the facts they were fitted to."""

from __future__ import annotations

import pytest

from parrotsim.calibrate import facts
from parrotsim.calibrate import project as project_mod
from parrotsim.calibrate.project import (
    TARGETS,
    attention_floor,
    decode_step,
    scale_curves,
    shared_pages_grid,
)
from parrotsim.sim.model.profile import load_profile

NAMES = ["a100-80gb_llama-13b", "a100-80gb_llama-7b", "a6000_llama-7b"]


@pytest.mark.parametrize("name", NAMES)
def test_projected_marked(name):
    p = load_profile(name)
    assert p.source == "projected+fitted"
    assert p.residuals and p.environment["projected_from"].startswith("h200_")


def test_a100_13b_decode_step():
    p = load_profile("a100-80gb_llama-13b")
    assert decode_step(p) == pytest.approx(facts.DECODE_STEP_13B_A100_S, rel=1e-3)
    assert p.residuals["fig10_median_abs_rel_error"] <= 0.10


def test_projection_leaves_source_gpu_terms_out():
    """The H200 7B profile's wave model counts the H200's 132 SMs: it is never carried to a
    projected GPU (it was, until the projection named it). Its shared-page grid is the saving
    of co-running programs through L2: carried to the A100 (an L2 of the H200's class), scaled
    like decode attention, not to the A6000 (6 MB)."""
    src = load_profile("h200_llama-7b")
    assert src.curves.decode_paged_waves is not None and src.curves.paged_shared_prefix is not None
    a6000 = scale_curves(src, "a6000", k_attn=0.8)
    assert a6000.curves.decode_paged_waves is None
    assert a6000.curves.paged_shared_prefix is None
    assert a6000.gpu.name == "NVIDIA RTX A6000"
    a100 = scale_curves(src, "a100-80gb", k_attn=0.8)
    assert a100.curves.decode_paged_waves is None
    r_bw = src.gpu.hbm_tb_s / a100.gpu.hbm_tb_s
    got, want = a100.curves.paged_shared_prefix, src.curves.paged_shared_prefix
    assert got.x == want.x and got.y == want.y
    assert got.seconds[3][4] == pytest.approx(want.seconds[3][4] * r_bw * 0.8)


def test_shipped_a100_profiles_carry_their_projected_shared_pages():
    """The shipped A100 profiles hold the grid the projection gives with their own knobs
    (``python -m parrotsim.calibrate.project --shared-pages-only``); the A6000 holds none."""
    for name, gpu in (("a100-80gb_llama-13b", "a100-80gb"), ("a100-80gb_llama-7b", "a100-80gb")):
        prof = load_profile(name)
        env = prof.environment
        want = shared_pages_grid(load_profile(env["projected_from"]), gpu,
                                 float(env["k_attention_bandwidth"]))
        assert prof.curves.paged_shared_prefix == want
    assert load_profile("a6000_llama-7b").curves.paged_shared_prefix is None


@pytest.mark.parametrize("name", NAMES)
def test_shipped_projections_read_kv_no_faster_than_the_gpus_datasheet(name):
    """A projected paged-attention cell at k_attn reads KV at (the H200 kernel's fraction of its
    datasheet bandwidth) / k_attn of the target's: below the floor it claims more than 100 %
    (the profiles fitted at 0.80 read at up to 124 %)."""
    src = load_profile(load_profile(name).environment["projected_from"])
    assert 0.9 < attention_floor(src) <= 1.0  # the H200 kernel: up to 96.6-99.4 % of 4.8 TB/s
    assert attention_floor(load_profile(name)) <= 1.0 + 1e-9
    assert attention_floor(scale_curves(src, TARGETS[name][0], k_attn=0.8)) > 1.2


def test_the_fit_skips_factors_below_the_bandwidth_floor(monkeypatch):
    """Fig 10's error favouring the smallest factor picks the smallest one at the floor, not
    below it."""
    def fake_fig10(prof, seeds):
        k = float(prof.environment["k_attention_bandwidth"])
        return None, {"cell": k}
    monkeypatch.setattr(project_mod, "fig10_error", fake_fig10)
    (_, k_attn), _ = project_mod.fit_knobs(1, verbose=False)
    assert k_attn == min(k for k in project_mod.ATTN_GRID if k >= 0.995)


def test_share_software_gives_every_profile_the_source_runtimes():
    """Hand-built: two profiles whose runtimes differ; after sharing, both carry the source's
    runtimes and keep their own curves."""
    from parrotsim.calibrate.interim import share_software
    from parrotsim.sim.model.profile_parts import Runtime
    src = load_profile("a100-80gb_llama-13b")
    other = load_profile("a6000_llama-7b").model_copy(update={"runtimes": {
        "vllm": Runtime(prefill_overhead_s=0.5), "parrot": Runtime(prefill_scale=3.0)}})
    shared = share_software({"src": src, "other": other}, "src")
    assert shared["other"].runtimes == src.runtimes
    assert shared["other"].curves == other.curves
    assert shared["src"] == src


def test_shared_software_cli(tmp_path, capsys):
    """--shared-software writes the three projected profiles with one set of runtimes and a
    residual line each; it refuses to write into the shipped folder (exit status 2)."""
    assert project_mod.main(["--shared-software", "--out", str(project_mod.PROFILES_DIR)]) == 2
    assert project_mod.main(["--shared-software", "--out", str(tmp_path)]) == 0
    written = {name: load_profile(str(tmp_path / f"{name}.yaml")) for name in project_mod.TARGETS}
    source = written["a100-80gb_llama-13b"].runtimes
    assert all(p.runtimes == source for p in written.values())
    assert source == load_profile("a100-80gb_llama-13b").runtimes
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 3 and "bing_prefix_fill=" in lines[1]
    assert written["a100-80gb_llama-7b"].residuals["bing_prefix_fill"] < -0.3
