"""Runs that cannot be made or cannot finish (issue 21): input errors before anything runs (exit
2, ``FILE:LINE:COL: field: message``, with ``PATH:LINE`` for trace rows, nothing written), and
calls no engine can run, which fail their run with their tables kept. On the old code each of
these hung at 100 % CPU (least_queue) or failed every run of the sweep with exit 1."""

from __future__ import annotations

import pandas as pd
import pytest

from parrotsim.cli import main
from parrotsim.sim.model.profile import shipped_profiles

ROWS = "num_prefill_tokens,num_decode_tokens,arrived_at\n100,10,0.0\n"


def run_file(write_yaml, tmp_path, capsys, text: str) -> tuple[int, str]:
    path = write_yaml(f"name: t\nrun:\n{text}")
    code = main(["run", str(path), "--out", str(tmp_path / "out"), "-q", "--jobs", "1"])
    return code, capsys.readouterr().err


def trace(tmp_path, rows: str, name: str = "trace.csv") -> str:
    path = tmp_path / name
    path.write_text(ROWS.splitlines()[0] + "\n" + rows)
    return str(path)


@pytest.mark.parametrize("engine, rows, error", [
    ("{policy: vllm}", "100,10,0.0\n9000,10,0.5\n",
     ":3: a call of 9000 prompt tokens (+38 of chat template) and 10 output tokens can never run:"
     " its prompt of 9038 tokens is longer than the 8000 tokens one iteration fills"),
    ("{policy: hf}", "100,10,0\n60000,10,0.5\n", ":3: a call of 60000 prompt tokens"),
    ("{policy: vllm}", "", ": no request to replay (rows skipped: 0)"),
    ("{policy: vllm}", "100,10,0\n200,x,1\n", ":3: num_decode_tokens: not a number: 'x'"),
    ("{policy: vllm}", "100,10,0\n200,10,nan\n", ":3: arrived_at: not a finite time: 'nan'"),
])
def test_bad_trace_is_a_file_error(engine, rows, error, write_yaml, tmp_path, capsys):
    """The first bad row of the trace, in every run of a sweep, one line: exit 2."""
    path = trace(tmp_path, rows)
    code, err = run_file(write_yaml, tmp_path, capsys,
                         f"  workload: {{kind: trace, path: {path}, format: vidur}}\n"
                         f"  cluster: {{engine: {engine}}}\nsweep:\n  cluster.engines: [1, 2, 3]\n")
    lines = err.splitlines()
    assert code == 2 and len(lines) == 1, err
    assert lines[0].startswith(f"{tmp_path}/exp.yaml:3:33: workload.path: {path}{error}"), err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("engine", ["{policy: parrot}", "{policy: vllm, capacity_tokens: 4096}"])
def test_long_prompt_an_engine_can_run_is_no_error(engine, write_yaml, tmp_path, capsys):
    """Parrot fills a long prompt alone; vLLM 0.1.4 with a capacity truncates it."""
    path = trace(tmp_path, "9000,10,0.5\n")
    code, err = run_file(write_yaml, tmp_path, capsys,
                         f"  workload: {{kind: trace, path: {path}, format: vidur}}\n"
                         f"  cluster: {{engine: {engine}}}\n")
    assert (code, err) == (0, "")
    calls = pd.read_parquet(next((tmp_path / "out" / "runs").glob("*/calls.parquet")))
    assert "error" not in calls and (calls["returned"] > 0).all()


def test_kv_cache_without_a_block_is_a_file_error(write_yaml, tmp_path, capsys):
    text = shipped_profiles()["a100-80gb_llama-13b"].read_text()
    small = tmp_path / "small.yaml"
    small.write_text(text.replace("memory_gib: 80.0", "memory_gib: 26.2", 1))
    code, err = run_file(write_yaml, tmp_path, capsys,
                         "  workload: {kind: sharegpt, num_requests: 5}\n"
                         f"  cluster: {{profile: {small}}}\n"
                         "variants:\n  v: {}\n  w: {cluster.profile: a100-80gb_llama-13b,\n"
                         "      cluster.engine: {policy: vllm, capacity_tokens: 8}}\n")
    assert code == 2
    assert err.splitlines() == [
        f"{tmp_path}/exp.yaml:4:22: cluster.profile: {small}: the GPU's memory leaves 0 tokens "
        "for the KV cache after the weights and the activation reserve, less than one block "
        "of 16 tokens",
        f"{tmp_path}/exp.yaml:8:23: cluster.engine: the vllm engine's KV cache holds no block "
        "of 16 tokens"]


def test_rejected_calls_fail_the_run_and_keep_its_tables(write_yaml, tmp_path, capsys):
    """capacity_tokens: 16 is one KV block, which no chat prompt fits: the run ends, failed,
    without metrics; its calls table says why each call was rejected."""
    code, err = run_file(write_yaml, tmp_path, capsys,
                         "  workload: {kind: sharegpt, num_requests: 5}\n"
                         "  cluster: {engine: {policy: vllm, capacity_tokens: 16}}\n")
    assert code == 1 and "RejectedCalls: 5 of 5 calls can never run" in err
    row = pd.read_csv(tmp_path / "out" / "summary.csv").iloc[0]
    assert row["status"] == "failed" and "mean_jct" not in row  # no metrics at all
    assert row["error"].startswith("RejectedCalls: 5 of 5 calls can never run on an engine")
    calls = pd.read_parquet(tmp_path / "out" / "runs" / row["run_hash"] / "calls.parquet")
    assert calls["error"].str.contains("the engine admits a prompt into at most 1").all()
