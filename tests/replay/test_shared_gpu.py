"""shared_gpu.py on a hand-built iteration log and kernel benchmark."""

import json

import pandas as pd
import pytest

from parrotsim.calibrate.replay import shared_gpu
from parrotsim.sim.model.costmodel import CostModel
from parrotsim.sim.model.curves import Interp, bilinear
from parrotsim.sim.model.profile import load_profile

BENCH = pd.DataFrame(
    [dict(batch=b, prefix=p, suffix=s, shared_us=10.0 + p / 1000 + b * s / 100)
     for b in (8, 32) for p in (4096, 8192) for s in (64, 512)])


def test_bench_nearest_and_line():
    us, shape = shared_gpu.bench_at(BENCH, 30, 5000, 900)
    assert shape == "B=32 P=4096 S=512" and us == pytest.approx(10 + 4.096 + 32 * 5.12)
    # linear in the suffix through 64 and 512, in the prefix between 4096 and 8192
    assert shared_gpu.bench_line(BENCH, 32, 6144, 1000) == pytest.approx(
        10 + 6.144 + 32 * 10.0)
    assert shared_gpu.bench_line(BENCH, 16, 6144, 1000) != shared_gpu.bench_line(
        BENCH, 16, 6144, 1000)  # NaN: no such batch measured


def test_shared_iterations_split_the_measured_attention(tmp_path):
    prof = load_profile("h200_llama-7b")
    run = tmp_path / "runs" / "a"
    run.mkdir(parents=True)
    (run / "meta.json").write_text(json.dumps({"config": {"workload": {"shared_prefix": 5000}}}))
    n, gpu = 32, 0.012
    it = pd.DataFrame({"prefill_seqs": [0, 0, 0], "graph": [1, 1, 1],
                       "shared_groups": [1, 1, 0], "shared_pages": [313, 313, 0],
                       "decode_seqs": [n, n, n],
                       "decode_kv_tokens": [n * 6000, n * 6000, n * 6000],
                       "decode_max_ctx": [7000, 7000, 7000], "gpu_s": [gpu, gpu, 0.02]})
    it.to_parquet(run / "iterations.parquet")
    d = shared_gpu.shared_iterations(run, prof, BENCH)
    assert len(d) == 1 and d["iters"].iloc[0] == 2  # the paged batch is left out
    r = d.iloc[0]
    cm = CostModel(prof, "(kernel only)")
    rest = Interp.of(prof.curves.linear).scalar(n) + prof.curves.decode_per_seq_s * n
    assert r["attention_ms"] == pytest.approx((gpu - rest) * 1e3)
    model = bilinear(prof.curves.shared_prefix, 5000, n) + cm.paged_time(n, n * 1000)
    assert r["model_ms"] == pytest.approx(model * 1e3)
    assert r["model_excess_ms"] == pytest.approx(
        (model + cm.paged_excess(n, n * 1000, 2000)) * 1e3)
    assert r["mean_suffix"] == 1000 and r["longest_suffix"] == 2000
    assert r["prefix_read"] == 313 * 16 and r["bucket"] and r["auto_mode"] == "fused"
    assert r["bench_line_ms"] == pytest.approx(
        shared_gpu.bench_line(BENCH, n, 313 * 16, 1000) * 32 / 1e3)
