"""The cost model: interpolation, composition, extrapolation counting, roofline sanity."""

import math

import numpy as np
import pytest

from parrotsim.calibrate.roofline import GPUS, MODELS, roofline_profile
from parrotsim.sim.model.costmodel import CostModel
from parrotsim.sim.model.curves import Interp, PagedRows
from parrotsim.sim.model.kv_cache import KVCache
from parrotsim.sim.model.profile_parts import Curve, PagedGrid, Runtime
from parrotsim.sim.model.sequence import Batch
from tests.sim.helpers import a100_13b, seq


def _with_ctx(s, tokens):
    from parrotsim.sim.model.kv_cache import KVCache

    kv = KVCache(10**6)
    s.ctx = kv.create()
    kv.grow(s.ctx, tokens)
    return s


def test_linear_interpolation_between_points():
    prof = a100_13b()
    curves = prof.curves.model_copy(update={
        "linear": Curve(x=[1, 100], seconds=[0.01, 0.02]),
        "iteration_overhead_s": 0.0,
        "decode_paged": Curve(x=[0, 1000], seconds=[0.0, 0.0])})
    cm = CostModel(prof.model_copy(update={"curves": curves}))
    t = cm.decode_times(50, 0, 50, [], 1)[0]
    assert t == pytest.approx(0.01 + 0.01 * 49 / 99)
    assert cm.extrapolated == 0
    cm.decode_times(200, 0, 0, [], 1)
    assert cm.extrapolated == 1  # past the last point: extended linearly and counted


def test_roofline_decode_is_weight_bound_and_prefill_compute_bound():
    prof = a100_13b()
    cm = CostModel(prof)
    weights_time = 26e9 / (2.04e12 * 0.85)
    t1 = cm.decode_times(1, 1000, 1, [], 1)[0]
    assert weights_time < t1 < weights_time * 1.3
    big = Batch(prefills=[(_with_ctx(seq(4096, 1), 4096), 4096)])
    flop_time = 2 * 13e9 * 4096 / (312e12 * 0.7)
    assert cm.iteration_time(big) > flop_time


def test_decode_cost_grows_with_kv_and_batch():
    cm = CostModel(a100_13b())
    assert cm.decode_times(8, 8000, 8, [], 1)[0] > cm.decode_times(8, 1000, 8, [], 1)[0]
    times = cm.decode_times(4, 4000, 4, [], 100)
    assert np.all(np.diff(times) >= 0)


def test_stepping_and_vector_decode_times_are_identical():
    cm = CostModel(a100_13b())
    many = cm.decode_times(7, 12345, 7, [(2000, 3)], 50)
    one_by_one = [cm.decode_times(7, 12345 + 7 * j, 7, [(2000, 3)], 1)[0] for j in range(50)]
    assert many.tolist() == one_by_one


def test_shared_prefix_reads_prefix_once():
    prof = roofline_profile(GPUS["h200"], MODELS["llama-7b"])
    cm = CostModel(prof)
    b, prefix, suffix = 64, 6000, 256
    paged = cm.decode_times(b, b * (prefix + suffix), b, [], 1)[0]
    shared = cm.decode_times(b, b * suffix, b, [(prefix, b)], 1)[0]
    assert shared < paged


def test_runtime_scale_and_overhead():
    prof = a100_13b()
    from parrotsim.sim.model.profile_parts import Runtime

    prof = prof.model_copy(update={"runtimes": {"hf": Runtime(overhead_s=0.01, scale=2.0)}})
    base = CostModel(prof, "vllm").decode_times(1, 100, 1, [], 1)[0]
    hf = CostModel(prof, "hf").decode_times(1, 100, 1, [], 1)[0]
    assert hf == pytest.approx(0.01 + 2 * base)


def _with_paged_grid(slow: float = 1.3):
    """The roofline A100 profile plus a paged grid whose 16-sequence row is ``slow`` times the
    1-D curve (the H200's tail wave), the other rows equal to it."""
    from parrotsim.sim.model.profile_parts import PagedGrid

    prof = a100_13b()
    c = prof.curves
    cm = CostModel(prof, "none")
    bs, ctxs = [1.0, 8.0, 16.0, 32.0, 256.0], [0.0, 128.0, 1024.0, 8192.0]
    rows = [[max(1e-6, cm.paged_time(1, b * x)) * (slow if b == 16 else 1.0) for x in ctxs]
            for b in bs]
    grid = PagedGrid(x=bs, y=ctxs, seconds=rows)
    return prof.model_copy(update={"curves": c.model_copy(update={"decode_paged_grid": grid})})


def test_paged_grid_used_at_batch_count_and_mean_context():
    prof = _with_paged_grid()
    one_d, grid = CostModel(a100_13b(), "none"), CostModel(prof, "none")
    assert grid.paged_time(16, 16 * 1000) == pytest.approx(1.3 * one_d.paged_time(16, 16_000))
    assert grid.paged_time(8, 8 * 1000) == pytest.approx(one_d.paged_time(8, 8_000))
    step16 = grid.decode_times(16, 16 * 1000, 16, [], 1)[0]
    assert step16 > one_d.decode_times(16, 16 * 1000, 16, [], 1)[0]
    assert grid.extrapolated == 0
    grid.paged_time(512, 512 * 1000)  # more sequences than the grid: counted
    grid.paged_time(8, 8 * 9000)  # longer contexts than the grid: counted
    assert grid.extrapolated == 2
    assert grid.paged_time(0, 0) == 0.0


def test_paged_grid_stretch_matches_steps():
    cm = CostModel(_with_paged_grid(), "none")
    for n, kv in ((16, 16 * 100), (24, 24 * 7900), (300, 300 * 50)):
        stretch = cm.decode_stretch(n, kv, n, [(2000, 3)])
        steps = [stretch.step(j) for j in range(400)]
        assert stretch.duration(400) == pytest.approx(sum(steps), rel=1e-12)
        assert np.all(np.diff(steps) >= 0)


def test_remembered_prefill_times_equal_fresh_ones_and_count_extrapolation_again():
    prof = a100_13b()
    far = 2 * int((2 * prof.curves.prefill_attention.x[-1]) ** 0.5)  # past the measured work
    batch = Batch(prefills=[(_with_ctx(seq(far, 1), far), far)])
    cm = CostModel(prof)
    first = cm.iteration_time(batch)
    counted = cm.extrapolated
    assert counted >= 1
    assert cm.iteration_time(batch) == first  # served from memory
    assert cm.extrapolated == 2 * counted
    assert CostModel(prof).iteration_time(batch) == first


def test_prefill_launch_floor_bounds_small_prompt_iterations_only():
    def prompt(n: int) -> Batch:  # n new tokens, no context before them
        s = seq(n, 1)
        s.ctx = KVCache(1000).create()
        s.ctx.tokens = n
        return Batch(prefills=[(s, n)], decodes=[])
    prof = a100_13b()
    plain = CostModel(prof, "vllm")
    small, large = plain.iteration_time(prompt(16)), plain.iteration_time(prompt(4000))
    floor = (small + large) / 2  # above the small prompt's time, below the large one's
    prof = prof.model_copy(update={"runtimes": {"vllm": Runtime(
        prefill_overhead_s=0.001, prefill_launch_floor_s=floor)}})
    cm = CostModel(prof, "vllm")
    assert cm.iteration_time(prompt(16)) == pytest.approx(0.001 + floor)  # launch-bound
    assert cm.iteration_time(prompt(4000)) == pytest.approx(0.001 + large)  # GPU-bound
    assert cm.decode_times(1, 100, 1, [], 1)[0] == plain.decode_times(1, 100, 1, [], 1)[0]


def test_eager_launch_floor_grows_with_decodes_and_forked_groups():
    """A mixed iteration (a short fill plus decodes) issues the decode-attention launches too:
    its floor is the fill's plus ``decode_launch_s``, plus ``group_launch_s`` per forked group
    with a shared-prefix kernel (the paged kernel launches no pass per group)."""
    def mixed(decodes: int) -> Batch:
        fill = _with_ctx(seq(7, 1), 7)
        return Batch(prefills=[(fill, 7)],
                     decodes=[_with_ctx(seq(100, 1), 120 + i) for i in range(decodes)])
    rt = Runtime(prefill_launch_floor_s=0.050, decode_launch_s=0.020, group_launch_s=0.010)
    prof = a100_13b().model_copy(update={"runtimes": {"parrot": rt}})
    shared = CostModel(prof, "parrot", kernel="shared_prefix")
    paged = CostModel(prof, "parrot", kernel="paged")
    groups = [(64, 2), (32, 2), (48, 2)]
    assert shared.iteration_time(mixed(0)) == pytest.approx(0.050)  # all launch-bound
    assert shared.iteration_time(mixed(6)) == pytest.approx(0.070)
    assert shared.iteration_time(mixed(6), groups, 288) == pytest.approx(0.100)
    assert paged.iteration_time(mixed(6), groups, 288) == pytest.approx(0.070)
    plain = CostModel(a100_13b(), "parrot", kernel="shared_prefix")
    assert shared.decode_times(6, 700, 6, [], 1)[0] == plain.decode_times(6, 700, 6, [], 1)[0]


def test_runtime_host_time_per_sequence_adds_to_every_iteration():
    prof = a100_13b()
    plain = CostModel(prof, "vllm")
    prof = prof.model_copy(update={"runtimes": {"vllm": Runtime(overhead_per_seq_s=1e-5)}})
    cm = CostModel(prof, "vllm")
    for n in (1, 16, 64):
        got = cm.decode_times(n, 1000 * n, n, [], 3)
        assert got == pytest.approx(plain.decode_times(n, 1000 * n, n, [], 3) + 1e-5 * n)
        stretch, base = cm.decode_stretch(n, 1000 * n, n, []), plain.decode_stretch(
            n, 1000 * n, n, [])
        assert stretch.duration(500) == pytest.approx(base.duration(500) + 500 * 1e-5 * n)
    s = seq(100, 1)
    s.ctx = KVCache(1000).create()
    s.ctx.tokens = 100
    batch = Batch(prefills=[(s, 100)], decodes=[])
    assert cm.iteration_time(batch) == pytest.approx(plain.iteration_time(batch) + 1e-5)


def _with_paged_shared(prof, seconds_at_prefix: float):
    """``prof`` with a hand-built paged-over-shared-pages grid: 0 s at prefix 0, then
    ``seconds_at_prefix`` for a 1000-token prefix at every group size (linear between)."""
    from parrotsim.sim.model.profile_parts import Grid2D

    grid = Grid2D(x=[0.0, 1000.0], y=[1.0, 256.0],
                  seconds=[[0.0, 0.0], [seconds_at_prefix, seconds_at_prefix]])
    return prof.model_copy(update={"curves": prof.curves.model_copy(
        update={"paged_shared_prefix": grid})})


def test_paged_kernel_over_shared_pages_uses_its_measured_grid():
    """With ``paged_shared_prefix`` a paged-kernel cost model costs a forked group as its
    suffixes plus the grid at (prefix, group size); without it (or for the shared-prefix
    kernel) nothing changes."""
    base = roofline_profile(GPUS["h200"], MODELS["llama-7b"])
    prof = _with_paged_shared(base, 0.004)
    b, prefix, suffix = 32, 500, 100
    paged = CostModel(prof, kernel="paged")
    assert paged.paged_groups
    suffix_only = paged.decode_times(b, b * suffix, b, [], 1)[0]
    grouped = paged.decode_times(b, b * suffix, b, [(prefix, b)], 1)[0]
    assert grouped == pytest.approx(suffix_only + 0.002)  # half way to 1000 tokens
    assert not CostModel(base, kernel="paged").paged_groups
    shared = CostModel(prof, kernel="shared_prefix")
    assert not shared.paged_groups
    assert shared.decode_times(b, b * suffix, b, [(prefix, b)], 1)[0] == pytest.approx(
        CostModel(base).decode_times(b, b * suffix, b, [(prefix, b)], 1)[0])


def test_profile_without_paged_shared_grid_is_written_as_before(tmp_path):
    from parrotsim.sim.model.profile import dump_profile, load_profile

    base = roofline_profile(GPUS["h200"], MODELS["llama-7b"])
    dump_profile(base, tmp_path / "a.yaml")
    assert "paged_shared_prefix" not in (tmp_path / "a.yaml").read_text()
    dump_profile(_with_paged_shared(base, 0.004), tmp_path / "b.yaml")
    back = load_profile(str(tmp_path / "b.yaml"))
    assert back.curves.paged_shared_prefix.seconds[1] == [0.004, 0.004]


def test_paged_engine_with_prefix_cache_costs_forked_groups_on_the_grid():
    """Bing-style run (64 calls fork one 5107-token system prompt, Parrot engine, prefix cache):
    with the paged kernel a profile's ``paged_shared_prefix`` grid makes the run faster than
    reading every context privately (a grid that costs a prefix at 0 s: only the suffixes
    are read); the shared-prefix kernel's run does not change."""
    from parrotsim.api import run_config, simulate
    from parrotsim.sim.model.profile import load_profile

    def run(kernel: str, prof):
        cfg = run_config(workload={"kind": "bing", "requests": "sampled", "output_len": 20},
                         network={"model": "none"},
                         cluster={"engines": 1, "profile": "h200_llama-7b", "prefix_cache": True,
                                  "kernel": kernel,
                                  "engine": {"policy": "parrot", "num_kv_cache_blocks": 6800},
                                  "scheduler": {"policy": "slots", "slots": 32}}, seed=0)
        return simulate(cfg, profile=prof).summary["mean_jct"]

    base = load_profile("h200_llama-7b").model_copy(update={"curves": load_profile(
        "h200_llama-7b").curves.model_copy(update={"paged_shared_prefix": None})})
    free = _with_paged_shared(base, 0.0)
    assert run("paged", free) < run("paged", base)
    assert run("shared_prefix", free) == run("shared_prefix", base)


def test_paged_rows_of_one_grid_share_their_log_tables():
    """Every engine's cost model builds PagedRows on its profile's grid: the logs are computed
    once per grid object (equal to computing them afresh), and a new grid gets its own."""
    curve = Interp([0.0, 1.0], [0.0, 1.0])
    grid = PagedGrid(x=[1, 8, 64], y=[0, 1024, 8192],
                     seconds=[[1e-5, 2e-5, 9e-5], [2e-5, 5e-5, 3e-4], [5e-5, 3e-4, 2e-3]])
    a, b = PagedRows(grid, curve), PagedRows(grid, curve)
    assert a.logt is b.logt and a.logb is b.logb
    assert a.logt == [[math.log(s) for s in row] for row in grid.seconds]
    assert a.row(20).ys == b.row(20).ys
    other = grid.model_copy(update={"seconds": [[2 * s for s in row] for row in grid.seconds]})
    c = PagedRows(other, curve)
    assert c.logt is not a.logt
    assert c.logt[0][0] == pytest.approx(math.log(2e-5))
