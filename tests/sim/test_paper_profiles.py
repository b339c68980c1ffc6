"""The shipped A100 profile (projected from H200 measurements) against the paper's published
calibration facts."""

import numpy as np

from parrotsim.calibrate import facts
from parrotsim.calibrate.fig10 import fig10_cell
from parrotsim.sim.harness.config import RunConfig
from parrotsim.sim.harness.simulation import simulate


def chain_jct(output_len: int, policy: dict, doc: int = 3) -> tuple[float, int]:
    result = simulate(RunConfig.model_validate({
        "workload": {"kind": "chain_summary", "docs": [doc], "chunk_size": 1024,
                     "output_len": output_len},
        "cluster": {"profile": "a100-80gb_llama-13b", "engine": policy}}))
    return result.summary["mean_jct"], int(result.summary["calls"])


def test_fig11_vllm_latency_grows_by_the_published_decode_step():
    vllm = {"policy": "vllm", "capacity_tokens": 4096}
    (short, steps), (long, _) = chain_jct(25, vllm), chain_jct(100, vllm)
    per_token = (long - short) / (75 * steps)
    assert abs(per_token / facts.DECODE_STEP_13B_A100_S - 1) < 0.05


def test_fig11_hf_latency_grows_by_the_hf_decode_step():
    (short, steps), (long, _) = chain_jct(25, {"policy": "hf"}), chain_jct(100, {"policy": "hf"})
    assert abs((long - short) / (75 * steps) / facts.HF_DECODE_STEP_S - 1) < 0.05


def test_fig10_per_token_latency_grows_with_capacity_like_the_table():
    cells = [(2048, 15), (6144, 15), (12288, 15), (12288, 25)]
    sim = np.array([fig10_cell("a100-80gb_llama-13b", c, r, seeds=2) for c, r in cells])
    paper = np.array([facts.FIG10_TPOT_MS[c][facts.FIG10_RATES.index(r)] for c, r in cells])
    assert sim[0] < sim[1] < sim[2] < sim[3]  # more capacity, more load: slower tokens
    assert np.mean(np.abs(sim / paper - 1)) < 0.2
