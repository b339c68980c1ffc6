"""The replay loop's host terms, measured from a hand-made iteration log."""

import pandas as pd
import pytest

from parrotsim.calibrate.replay import runtime_fit
from parrotsim.sim.model.profile import load_profile


def log() -> pd.DataFrame:
    # three decode iterations (host 0.3, 0.4, 0.5 ms) and two prompt iterations (host 1 and
    # 3 ms, launches issued in 9 and 11 ms)
    return pd.DataFrame({
        "prefill_seqs": [0, 0, 0, 1, 2],
        "decode_seqs": [4, 4, 4, 0, 0],
        "wall_s": [5.2e-3, 5.3e-3, 5.4e-3, 12e-3, 15e-3],
        "post_s": [0.1e-3] * 5,
        "gpu_s": [5.0e-3, 5.0e-3, 5.0e-3, 11.1e-3, 12.1e-3],
        "launch_s": [0.1e-3, 0.1e-3, 0.1e-3, 9e-3, 11e-3]})


def test_host_terms_are_medians_of_the_log():
    rt = runtime_fit.host_terms(log())
    assert rt.overhead_s == pytest.approx(0.4e-3)
    assert rt.prefill_overhead_s == pytest.approx(2e-3)
    assert rt.prefill_launch_floor_s == pytest.approx(10e-3)
    assert rt.scale == rt.prefill_scale == 1.0


def _real_run(tmp_path):
    """A replay output folder under ``tmp_path / "real"`` holding one run with :func:`log`."""
    run = tmp_path / "real" / "runs" / "r1"
    run.mkdir(parents=True)
    log().to_parquet(run / "iterations.parquet")


def test_fitted_profile_keeps_the_gpu_curves(tmp_path):
    _real_run(tmp_path)
    out = tmp_path / "h200_llama-7b-replay.yaml"
    assert runtime_fit.main([str(tmp_path / "real"), "--out", str(out)]) == 0
    fitted, base = load_profile(str(out)), load_profile("h200_llama-7b")
    assert fitted.curves == base.curves and fitted.name == "h200_llama-7b-replay"
    assert fitted.runtimes["vllm"] == fitted.runtimes["parrot"] == runtime_fit.host_terms(log())


def test_host_time_per_sequence_is_the_decode_slope():
    # decode host 0.2 ms + 15 us per sequence, exactly; prompts: 1 ms + 15 us per sequence
    seqs = [1, 8, 32, 64, 2]
    df = pd.DataFrame({
        "prefill_seqs": [0, 0, 0, 0, 2], "decode_seqs": [1, 8, 32, 64, 0],
        "wall_s": [5e-3 + 0.2e-3 + 15e-6 * n for n in seqs[:4]] + [12e-3 + 1e-3 + 30e-6],
        "post_s": [0.0] * 5, "gpu_s": [5e-3] * 4 + [12e-3], "launch_s": [0.1e-3] * 4 + [9e-3]})
    rt = runtime_fit.host_terms(df)
    assert rt.overhead_per_seq_s == pytest.approx(15e-6)
    assert rt.overhead_s == pytest.approx(0.2e-3)
    assert rt.prefill_overhead_s == pytest.approx(1e-3)


def test_a_log_without_prompt_iterations_is_refused():
    with pytest.raises(ValueError, match="prompt-filling"):
        runtime_fit.host_terms(log().iloc[:3])


def test_one_runtime_is_fitted_and_the_others_kept(tmp_path):
    _real_run(tmp_path)
    out = tmp_path / "parrot-fit.yaml"
    assert runtime_fit.main([str(tmp_path / "real"), "--profile", "h200_llama-7b-replay",
                             "--runtime", "parrot", "--out", str(out)]) == 0
    fitted, base = load_profile(str(out)), load_profile("h200_llama-7b-replay")
    assert fitted.runtimes["parrot"] == runtime_fit.host_terms(log()).model_copy(
        update={"group_launch_s": base.runtimes["parrot"].group_launch_s})
    assert fitted.runtimes["vllm"] == base.runtimes["vllm"] != fitted.runtimes["parrot"]


def test_launch_terms_of_the_base_profile_are_kept(tmp_path):
    _real_run(tmp_path)
    out = tmp_path / "lease.yaml"
    assert runtime_fit.main([str(tmp_path / "real"), "--profile", "h200_llama-7b-replay",
                             "--out", str(out)]) == 0
    fitted = load_profile(str(out))
    for name in ("vllm", "parrot"):
        assert fitted.runtimes[name].group_launch_s == 0.00064  # launch_bench's, kept
        assert fitted.runtimes[name].overhead_s == runtime_fit.host_terms(log()).overhead_s
