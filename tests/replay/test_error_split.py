"""error_split.py: the model's per-iteration error split into GPU and host parts, on a replay
that is exactly the simulator with a made-up GPU / host division of each iteration."""

import pytest

from parrotsim.calibrate.replay import error_split
from parrotsim.calibrate.replay.tables import store

from .helpers import config, cost_model_replay


def _run(tmp_path, gpu_share: float = 0.9):
    cfg = config(rate=10.0, n=25, capacity=2048, seed=3)
    result = cost_model_replay(cfg).run()
    it = result.iterations
    # as if measured: the GPU ran gpu_share of each iteration, the host the rest (half of it
    # building inputs)
    it["gpu_s"] = it["wall_s"] * gpu_share
    it["build_s"] = it["wall_s"] * (1 - gpu_share) / 2
    it["launch_s"] = 0.0
    run = tmp_path / "runs" / "rate-10"
    store(result, run, {"config": cfg.model_dump(mode="json")})
    return run, it


def test_parts_sum_to_the_models_error_and_split_it(tmp_path):
    run, it = _run(tmp_path)
    # the profile has no runtime terms: the model is all GPU time, so the GPU part is the
    # host share (the model is over the GPU by it) and the host part takes it back
    row = error_split.split_run(run, "h200_llama-7b")
    assert row["identical"] == row["iterations"] == len(it)
    busy = it["wall_s"].sum() + it["post_s"].sum()
    assert row["busy_s"] == pytest.approx(busy, rel=1e-6)
    assert row["gpu_part"] == pytest.approx(0.1 * it["wall_s"].sum() / busy, rel=1e-4)
    assert row["host_part"] == pytest.approx(-row["gpu_part"], abs=1e-5)
    # per request: the same two parts cancel, as the simulated error (the replay is the model)
    assert row["e2e_gpu_part"] > 0.05
    assert row["e2e_gpu_part"] + row["e2e_host_part"] == pytest.approx(0.0, abs=1e-5)
    assert abs(row["e2e_sim_bias"]) < 1e-6
    assert row["dec_build_ms"] == pytest.approx(row["dec_host_ms"] / 2, rel=1e-3)


def test_recost_charges_the_profiles_runtime_terms(tmp_path):
    run, _ = _run(tmp_path)
    it, _ = error_split.recost(run, "h200_llama-7b-replay")
    dec = it[it["prefill_seqs"] == 0]
    # 0.285 ms per decode iteration + 18.4 us per sequence (fitted on sharegpt_vllm)
    expect = 2.851e-4 + 1.840e-5 * dec["decode_seqs"]
    assert dec["host_model_s"].to_numpy() == pytest.approx(expect.to_numpy(), rel=1e-3)
    parts = it["gpu_err_s"] + it["host_err_s"]
    assert parts.to_numpy() == pytest.approx(
        (it["kernel_s"] + it["host_model_s"] - it["cycle_s"]).to_numpy(), abs=1e-12)


def test_cli_takes_parrot_runs_only_unless_told(tmp_path, capsys):
    _run(tmp_path)
    with pytest.raises(SystemExit, match="Parrot engine policy"):
        error_split.main([str(tmp_path)])
    assert error_split.main([str(tmp_path), "--all-policies"]) == 0
    assert "GPU + host" in capsys.readouterr().out
