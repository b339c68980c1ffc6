"""compare.py on hand-made tables, and end to end on a replay that is exactly the simulator."""

import pandas as pd
import pytest

from parrotsim.calibrate.replay import attribute, compare
from parrotsim.calibrate.replay.tables import store
from parrotsim.sim.model.metrics import CALL_COLUMNS

from .helpers import config, cost_model_replay


def calls(e2e, ttft, finished_after_first, output_len):
    rows = []
    for i, (lat, t, d, n) in enumerate(zip(e2e, ttft, finished_after_first, output_len,
                                           strict=True)):
        sent = float(i)
        rows.append({"app_id": f"chat-{i}", "app_kind": "chat", "call": "call", "engine": 0,
                     "sent": sent, "arrived": sent, "dispatched": sent, "engine_arrived": sent,
                     "admitted": sent, "first_token": sent + t, "last_fill": sent + t,
                     "finished": sent + t + d, "returned": sent + lat, "prompt_len": 10,
                     "cached_len": 0, "output_len": n, "preemptions": 0})
    return pd.DataFrame(rows, columns=CALL_COLUMNS)


def test_request_errors_on_hand_made_tables():
    real = calls([1.0, 2.0, 4.0], [0.1, 0.2, 0.4], [0.9, 1.8, 3.6], [10, 19, 1])
    sim = calls([1.1, 1.6, 4.0], [0.1, 0.1, 0.5], [0.9, 1.8, 3.6], [10, 19, 1])
    e = compare.request_errors(real, sim)
    assert e["requests"] == 3
    assert e["e2e_median_err"] == pytest.approx(0.1)
    assert e["e2e_mean_err"] == pytest.approx(0.1)
    assert e["e2e_p90_err"] == pytest.approx(0.18)  # quantile 0.9 of [0, 0.1, 0.2]
    assert e["e2e_mean_bias"] == pytest.approx(6.7 / 7 - 1)
    assert e["e2e_p90_bias"] == pytest.approx(3.52 / 3.6 - 1)  # p90s: 3.6 real, 3.52 sim
    assert e["ttft_median_err"] == pytest.approx(0.25)  # [0, 0.5, 0.25]
    assert e["tpot_mean_err"] == pytest.approx(0.0)  # equal decode times
    assert e["tpot_real_mean"] == pytest.approx(0.1)  # the 1-token call has no TPOT


def test_iteration_matching_stops_at_the_first_different_batch():
    key = dict(prefill_tokens=[5, 0, 0, 0], prefill_seqs=[1, 0, 0, 0],
               decode_seqs=[0, 1, 1, 2], decode_kv_tokens=[0, 6, 7, 20])
    real = pd.DataFrame({**key, "wall_s": [0.010, 0.004, 0.004, 0.005]})
    sim = pd.DataFrame({**key, "wall_s": [0.011, 0.004, 0.005, 0.005]})
    sim.loc[2, "decode_kv_tokens"] = 8
    m = compare.order_matched(real, sim)
    assert m["iter_matched"] == 2
    assert m["iter_matched_median_err"] == pytest.approx(0.05)  # median of 0.1 and 0
    assert m["iter_matched_sum_bias"] == pytest.approx(0.015 / 0.014 - 1)


def test_model_errors_on_a_hand_made_log():
    it = pd.DataFrame({"start": [0.0, 0.02, 0.03], "end": [0.015, 0.025, 0.035],
                       "wall_s": [0.015, 0.005, 0.005], "gpu_s": [0.014, 0.004, 0.0045],
                       "post_s": [0.0, 0.0001, 0.0], "model_s": [0.010, 0.004, 0.004],
                       "prefill_seqs": [1, 0, 0]})
    e = compare.model_errors(it)
    assert e["iter_decode_n"] == 2 and e["iter_prefill_n"] == 1
    assert e["iter_prefill_model_vs_wall_median_err"] == pytest.approx(1 / 3)
    assert e["iter_decode_model_vs_wall_median_err"] == pytest.approx(0.2)
    assert e["iter_decode_host_ms"] == pytest.approx((1.1 + 0.5) / 2)
    assert e["iter_model_vs_wall_total_bias"] == pytest.approx(0.018 / 0.025 - 1)


def test_a_replay_equal_to_the_simulator_compares_with_zero_error(tmp_path, capsys):
    cfg = config(rate=10.0, n=25, capacity=2048, seed=3)
    result = cost_model_replay(cfg).run()
    for col in ("gpu_s", "build_s", "launch_s"):  # as if measured: the GPU took all of it
        result.iterations[col] = result.iterations["wall_s"] if col == "gpu_s" else 0.0
    store(result, tmp_path / "runs" / "rate-10", {"config": cfg.model_dump(mode="json")})
    assert compare.main([str(tmp_path), "--out", str(tmp_path / "cmp")]) == 0
    row = pd.read_csv(tmp_path / "cmp" / "compare.csv").iloc[0]
    for m in ("e2e", "ttft", "tpot"):
        assert row[f"{m}_median_err"] < 1e-6 and abs(row[f"{m}_mean_bias"]) < 1e-6
    assert row["iter_matched"] == row["real_iterations"] == row["sim_iterations"]
    assert row["real_preemptions"] == row["sim_preemptions"] > 0
    assert row["real_peak_kv_blocks"] == row["sim_peak_kv_blocks"]
    assert (tmp_path / "cmp" / "compare_latency.png").stat().st_size > 0
    assert "E2E |sim-real|/real" in capsys.readouterr().out
    same, n, _ = attribute.redrive(tmp_path / "runs" / "rate-10")
    assert same == n


def test_host_terms_from_another_replay_of_the_same_lease(tmp_path):
    """``--host-from``: the profile's host terms come from the other replay's iteration logs
    (runtime_fit), the profile is written next to compare.csv and the simulation uses it."""
    from parrotsim.calibrate.replay import runtime_fit
    from parrotsim.sim.model.profile import load_profile

    cfg = config(rate=10.0, n=12, capacity=2048, seed=4)
    result = cost_model_replay(cfg).run()
    store(result, tmp_path / "real" / "runs" / "rate-10", {"config": cfg.model_dump(mode="json")})
    other = tmp_path / "other" / "runs" / "r1"
    other.mkdir(parents=True)
    log = pd.DataFrame({"prefill_seqs": [0, 0, 0, 1], "decode_seqs": [1, 4, 8, 0],
                        "wall_s": [5.3e-3, 5.6e-3, 6.0e-3, 14e-3], "post_s": [0.0] * 4,
                        "gpu_s": [5e-3, 5e-3, 5e-3, 12e-3], "launch_s": [1e-4] * 3 + [9e-3]})
    log.to_parquet(other / "iterations.parquet")
    out = tmp_path / "cmp"
    assert compare.main([str(tmp_path / "real"), "--out", str(out), "--profile",
                         "h200_llama-7b-replay", "--host-from", str(tmp_path / "other")]) == 0
    fitted = load_profile(str(out / "host_profile.yaml"))
    assert fitted.runtimes["vllm"].overhead_s == runtime_fit.host_terms(log).overhead_s
    assert fitted.runtimes["vllm"].group_launch_s == 0.00064  # the base's launch term kept
    row = pd.read_csv(out / "compare.csv").iloc[0]
    assert row["profile"] == str(out / "host_profile.yaml")
