"""The artifact's 2023 decode kernels (sim/model/era_kernels.py) on small hand-built cases."""

import numpy as np
import pytest
import simpy
from pydantic import ValidationError

from parrotsim.calibrate.roofline import GPUS, MODELS, roofline_profile
from parrotsim.sim.harness.config import RunConfig
from parrotsim.sim.model import era_kernels as era
from parrotsim.sim.model.costmodel import CostModel
from parrotsim.sim.model.engine import Engine
from parrotsim.sim.model.kv_cache import KVCache
from parrotsim.sim.model.profile_parts import PagedGrid
from parrotsim.sim.model.sequence import Batch, Sequence
from tests.sim.helpers import a100_13b


def _grid_profile():
    """The roofline A100/13B profile (2.04 TB/s, 40 heads: n_sat = 3.16) with a paged grid
    equal to its 1-D curve."""
    prof = a100_13b()
    cm = CostModel(prof, "none")
    bs, ctxs = [1.0, 4.0, 8.0, 64.0, 256.0], [0.0, 128.0, 1024.0, 8192.0]
    rows = [[max(1e-6, cm.paged_time(1, b * x)) for x in ctxs] for b in bs]
    grid = PagedGrid(x=bs, y=ctxs, seconds=rows)
    return prof.model_copy(update={"curves": prof.curves.model_copy(
        update={"decode_paged_grid": grid})})


@pytest.mark.parametrize("profile", [a100_13b, _grid_profile])
def test_no_split_costs_a_small_batch_as_the_saturating_one(profile):
    prof = profile()
    n_sat = era.saturating_sequences(2.04, 40)
    assert n_sat == pytest.approx(2.04 * era.NO_SPLIT_PROGRAMS_PER_TBS / 40)
    split = CostModel(prof, "none")
    old = CostModel(prof, "none", paged_kernel="vllm_0_1_4")
    factor = era.NO_SPLIT_BANDWIDTH_FACTOR
    for n in (1, 2, 3):  # below n_sat: as long as n_sat sequences of the same context
        for ctx in (500, 1200, 4000):
            sat = split.paged_time(n_sat, n_sat * ctx) if prof.curves.decode_paged_grid else \
                split.paged_time(1, n_sat * ctx)
            assert old.paged_time(n, n * ctx) == pytest.approx(factor * sat)
            assert old.paged_time(n, n * ctx) > split.paged_time(n, n * ctx)
    for n in (4, 8, 64, 200):  # past it: the bandwidth factor only
        assert old.paged_time(n, n * 3000) == pytest.approx(factor * split.paged_time(n, n * 3000))
    assert old.paged_time(0, 0) == 0.0


def test_no_split_decode_stretch_equals_its_steps():
    cm = CostModel(_grid_profile(), "none", paged_kernel="vllm_0_1_4")
    for n, kv in ((1, 700), (3, 3 * 100), (5, 5 * 7900), (40, 40 * 50)):
        stretch = cm.decode_stretch(n, kv, n, [])
        steps = [stretch.step(j) for j in range(500)]
        assert stretch.duration(500) == pytest.approx(sum(steps), rel=1e-12)
        assert np.all(np.diff(steps) >= 0)


def test_parrot_2023_prefix_pass_is_the_profiles_scaled_by_its_tile_factor():
    prof = roofline_profile(GPUS["h200"], MODELS["llama-7b"])
    ours = CostModel(prof, "none")
    old = CostModel(prof, "none", paged_kernel="vllm_0_1_4", kernel="parrot_2023")
    for n in (2, 16, 64, 256):
        expect = (era.parrot_prefix_factor(n) * ours.shared_prefix_time([(5000, n)])
                  + 32 * era.PARROT_REDUCE_LAUNCH_S)
        assert old.shared_prefix_time([(5000, n)]) == pytest.approx(expect)
    assert era.parrot_prefix_factor(1) == era.PARROT_PREFIX_FACTOR[0][1]
    assert era.parrot_prefix_factor(10_000) == era.PARROT_PREFIX_FACTOR[-1][1]
    f8, f16 = era.parrot_prefix_factor(8), era.parrot_prefix_factor(16)
    assert min(f8, f16) <= era.parrot_prefix_factor(11) <= max(f8, f16)
    assert era.parrot_reduce_s(256, 32) == 0.0  # one split: no reduce


def test_one_prefix_per_batch():
    assert era.one_prefix([(4000, 8)], 8) == [(4000, 8)]
    assert era.one_prefix([(4000, 6)], 8) == []  # two decodes outside the prefix's group
    assert era.one_prefix([(4000, 4), (3000, 4)], 8) == []


def _forked(kv: KVCache, prefix, cached: int, suffix: int) -> Sequence:
    s = Sequence(0, "app", "call", cached + suffix, 10, cached_len=cached, prefix_ctx=prefix)
    s.ctx = kv.create(prefix)
    kv.grow(s.ctx, suffix)
    return s


def _engine_decode_time(kernel: str, prefixes: int, n: int = 32, cached: int = 4000,
                        suffix: int = 200) -> float:
    prof = roofline_profile(GPUS["a100-80gb"], MODELS["llama-7b"])
    cm = CostModel(prof, "none", paged_kernel="vllm_0_1_4",
                   kernel="parrot_2023" if kernel == "parrot_2023" else "shared_prefix")
    kv = KVCache(10**6)
    eng = Engine(simpy.Environment(), 0, None, cm, kv, lambda s, t: None, kernel=kernel)
    roots = [kv.create() for _ in range(prefixes)]
    for r in roots:
        kv.grow(r, cached)
    batch = Batch(decodes=[_forked(kv, roots[i % prefixes], cached, suffix) for i in range(n)])
    groups, shared_tokens = eng._shared_groups(batch)
    kv_read = sum(s.kv_tokens for s in batch.decodes) - shared_tokens
    return cm.decode_stretch(n, kv_read, n, groups).duration(1)


def test_parrot_2023_serves_one_prefix_and_falls_back_to_paged_for_several():
    paged_one = _engine_decode_time("paged", 1)
    parrot_one = _engine_decode_time("parrot_2023", 1)
    assert parrot_one < paged_one  # the prefix read once
    # two prefixes in the batch: the artifact's kernel takes one, so the batch is paged
    assert _engine_decode_time("parrot_2023", 2) == pytest.approx(_engine_decode_time("paged", 2))
    # the project's kernel serves both groups
    assert _engine_decode_time("shared_prefix", 2) < _engine_decode_time("paged", 2)


def _config(**cluster):
    return {"workload": {"kind": "sharegpt", "num_requests": 4, "rate": 1.0},
            "cluster": cluster}


def test_config_validation_of_the_kernel_switches():
    ok = RunConfig.model_validate(_config(kernel="parrot_2023", paged_kernel="vllm_0_1_4",
                                          prefix_cache=True))
    assert ok.cluster.kernel == "parrot_2023"
    assert RunConfig.model_validate(_config()).cluster.paged_kernel == "split_kv"
    cases = [
        (dict(kernel="parrot_2023", paged_kernel="vllm_0_1_4"), "prefix_cache"),
        (dict(kernel="parrot_2023", prefix_cache=True), "vllm_0_1_4"),
        (dict(paged_kernel="vllm_0_1_4", engine={"policy": "hf"}), "runs no paged kernel"),
        (dict(paged_kernel="no_split"), "split_kv"),
    ]
    for cluster, message in cases:
        with pytest.raises(ValidationError, match=message):
            RunConfig.model_validate(_config(**cluster))


def test_era_kernel_fields_give_a_valid_config_on_the_artifacts_kernels():
    """Fig 17's Parrot on today's kernels (``--profile h200``: the shared-prefix kernel) switched
    to the artifact's kernels is a valid run on parrot_2023 and the no-split paged kernel; a
    paged run keeps its kernel and changes only the paged one."""
    from parrotsim.api import shipped_experiments
    from parrotsim.reports.build import _with_profile
    from parrotsim.sim.harness.config import RunConfig, era_kernel_fields

    today = _with_profile(shipped_experiments()["paper/fig17"], "h200")
    assert {r.config.cluster.kernel for r in today.runs} == {"shared_prefix", "paged"}
    for run in today.runs:
        if run.labels["workload.rate"] != 1:
            continue
        data = run.config.model_dump(mode="json")
        data["cluster"].update(era_kernel_fields(run.config.cluster))
        cluster = RunConfig.model_validate(data).cluster
        assert cluster.paged_kernel == "vllm_0_1_4"
        expected = {"shared_prefix": "parrot_2023"}.get(run.config.cluster.kernel,
                                                        run.config.cluster.kernel)
        assert cluster.kernel == expected and not cluster.one_prefix_per_batch
