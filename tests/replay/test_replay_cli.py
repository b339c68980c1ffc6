"""The replay command's run names and config overrides (no GPU: only the plans are built)."""

from __future__ import annotations

from pathlib import Path

from parrotsim.calibrate.replay.__main__ import run_name, with_overrides
from parrotsim.sim.harness.experiment import load_experiment

SHAREGPT = Path(__file__).resolve().parents[2] / "experiments" / "replay" / "sharegpt_vllm.yaml"


def test_overrides_replace_only_what_is_named():
    run = load_experiment(SHAREGPT).runs[0]
    cfg = run.config
    assert with_overrides(cfg, None) is cfg
    other_gpu = with_overrides(cfg, None, "h100_llama-7b")
    assert other_gpu.cluster.profile == "h100_llama-7b"
    assert other_gpu.workload == cfg.workload and other_gpu.cluster.engine == cfg.cluster.engine
    fewer = with_overrides(cfg, 20)
    assert fewer.workload.num_requests == 20 and fewer.cluster.profile == cfg.cluster.profile


def test_run_names_come_from_the_labels():
    runs = load_experiment(SHAREGPT).runs
    assert [run_name(r) for r in runs] == ["rate-3.0_seed-0", "rate-8.0_seed-0",
                                           "rate-14.0_seed-0"]
