"""calibrate/replay/skew.py on hand-built iteration logs and bench CSVs."""

import json

import pandas as pd
import pytest

from parrotsim.calibrate.replay.skew import (
    KERNEL_ONLY,
    bench_table,
    decode_iterations,
    model_for,
    with_waves,
)
from parrotsim.sim.model.costmodel import CostModel
from parrotsim.sim.model.profile import load_profile
from parrotsim.sim.model.profile_parts import PagedWaves

WAVES = PagedWaves(sms=132, programs_per_sm=2)


def _iters(rows):
    cols = ["decode_seqs", "decode_kv_tokens", "decode_max_ctx", "shared_groups", "model_s"]
    d = pd.DataFrame(rows, columns=cols)
    return d.assign(prefill_seqs=0, graph=1, gpu_s=d["model_s"] * 1.1)


def test_model_for_swaps_the_logged_excess_for_the_profiles():
    prof = with_waves(load_profile("h200_llama-7b"), WAVES)
    excess = CostModel(prof, KERNEL_ONLY).paged_excess(12, 12 * 400, 1600)
    assert excess > 0
    it = _iters([(12, 12 * 400, 1600, 0, 0.005), (12, 12 * 400, 1600, 1, 0.005),
                 (1, 900, 900, 0, 0.004)])
    # logged before the excess existed: add it (not with shared-prefix groups, not for 1)
    assert model_for(it, {}, prof).tolist() == pytest.approx([0.005 + excess, 0.005, 0.004])
    # logged with the same waves: unchanged; the profile without waves takes it out
    logged = {"model_s_paged_waves": WAVES.model_dump()}
    assert model_for(it, logged, prof).tolist() == pytest.approx(it["model_s"].tolist())
    bare = with_waves(prof, None)
    assert model_for(it, logged, bare).iloc[0] == pytest.approx(0.005 - excess)


def test_decode_iterations_costs_before_and_after(tmp_path):
    run = tmp_path / "x" / "runs" / "a"
    run.mkdir(parents=True)
    _iters([(12, 12 * 400, 1600, 0, 0.005), (4, 2000, 500, 2, 0.005)]).to_parquet(
        run / "iterations.parquet")
    prof = with_waves(load_profile("h200_llama-7b"), WAVES)
    d = decode_iterations(tmp_path / "x", prof)
    assert len(d) == 1  # the shared-prefix batch is left out
    cm = CostModel(with_waves(prof, None), KERNEL_ONLY)
    assert d["before_s"].iloc[0] == pytest.approx(cm.decode_stretch(12, 4800, 0, []).first)
    assert d["after_s"].iloc[0] > d["before_s"].iloc[0]
    assert d["imbalance"].iloc[0] == pytest.approx(4.0)


def test_bench_table_reads_ratios_and_the_knee(tmp_path):
    csv = tmp_path / "skew.csv"
    rows = [dict(kind="knee", n=n, k_long=0, longest=2048, short=2048, kv_tokens=2048 * n,
                 max_ctx=2048, splits=1, programs=32 * n, us_median=100.0 if n <= 8 else 200.0)
            for n in range(1, 13)]
    rows += [dict(kind=k, n=12, k_long=1, longest=4096, short=512, kv_tokens=kv, max_ctx=m,
                  splits=1, programs=384, us_median=us)
             for k, kv, m, us in (("skew", 4096 + 11 * 512, 4096, 300.0),
                                  ("mean", 12 * 811, 811, 100.0),
                                  ("long", 12 * 4096, 4096, 400.0))]
    pd.DataFrame(rows).to_csv(csv, index=False)
    csv.with_suffix(".json").write_text(json.dumps({"sms": 132, "kv_heads": 32}))
    table, meta = bench_table(csv, with_waves(load_profile("h200_llama-7b"), WAVES))
    assert meta["knee_after_seqs"] == 8 and meta["programs_per_sm"] == 2  # 256 of 264 slots
    row = table.iloc[0]
    assert row["skew_over_mean"] == 3.0 and row["toward_longest"] == pytest.approx(2 / 3, 1e-3)
    assert 1 < row["model"] and 0 < row["model_toward"] < 1


def test_model_for_adds_the_suffix_excess_to_old_shared_prefix_logs():
    prof = with_waves(load_profile("h200_llama-7b"), WAVES)
    cm = CostModel(prof, KERNEL_ONLY)
    # 32 decodes forking a 5000-token prefix; suffixes 900 on average, the longest 2100
    it = _iters([(32, 32 * 5900, 7100, 1, 0.010), (32, 32 * 5900, 7100, 1, 0.010)])
    it["shared_pages"] = [313, 0]  # the shared-prefix kernel served the first only
    old = {"config": {"workload": {"shared_prefix": 5000}}}
    excess = cm.paged_excess(32, 32 * 900, 2100)
    assert excess > 0
    assert model_for(it, old, prof).tolist() == pytest.approx([0.010 + excess, 0.010])
    # logs made with the suffix excess (or runs without a workload prefix) stay as logged
    new = {**old, "model_s_paged_waves": WAVES.model_dump(), "model_s_suffix_waves": True}
    assert model_for(it, new, prof).tolist() == pytest.approx([0.010, 0.010])
    assert model_for(it, {}, prof).tolist() == pytest.approx([0.010, 0.010])
