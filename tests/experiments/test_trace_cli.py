"""``parrotsim trace RUN_DIR`` end to end: a stored run's trace, and the errors it refuses with."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from parrotsim.cli import main
from tests.sim.test_timeline import assert_valid_trace

TRACED = """\
name: traced
run:
  workload: {kind: chain_summary, docs: [3], output_len: 25}
variants:
  vllm_chain:
    cluster.engine: {policy: vllm, capacity_tokens: 4096}
  parrot_map_reduce:
    workload: {kind: map_reduce, docs: [0, 1], chunk_size: 1024, output_len: 50}
    client: {kind: parrot}
    cluster.engine: {policy: parrot, scheduler: fifo, max_batch_size: 256,
                     max_num_batched_tokens: 8000, max_total_tokens: 45000,
                     num_kv_cache_blocks: 3500}
    cluster.scheduler: {policy: parrot, dag_aware: true, max_requests_per_engine: 128,
                        tokens_capacity: 45000}
"""


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    """variant -> its run folder, from one serial ``parrotsim run``."""
    root = tmp_path_factory.mktemp("traced")
    (root / "traced.yaml").write_text(TRACED)
    assert main(["run", str(root / "traced.yaml"), "--out", str(root / "out"), "-j", "1",
                 "-q"]) == 0
    summary = pd.read_csv(root / "out" / "summary.csv")
    return {v: root / "out" / "runs" / h for v, h in zip(summary["variant"],
                                                          summary["run_hash"], strict=True)}


def one_line_error(capsys, path: Path) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith(f"{path}: "), err
    return err


@pytest.mark.parametrize("variant", ["vllm_chain", "parrot_map_reduce"])
def test_trace_writes_a_valid_trace_beside_the_run(runs, variant, capsys):
    run_dir = runs[variant]
    assert main(["trace", str(run_dir)]) == 0
    assert f"wrote {run_dir / 'trace.json'}" in capsys.readouterr().out
    doc = json.loads((run_dir / "trace.json").read_text())
    assert_valid_trace(doc)
    names = {e["args"]["name"] for e in doc["traceEvents"] if e["name"] == "process_name"}
    assert names == {"engines", "apps"}
    calls = pd.read_parquet(run_dir / "calls.parquet")
    assert sum(e.get("cat") == "call" for e in doc["traceEvents"]) == len(calls)
    engines = pd.read_parquet(run_dir / "engines.parquet")
    busy = sum(e["dur"] for e in doc["traceEvents"] if e.get("cat") == "iteration")
    assert busy == pytest.approx(engines["busy_time"].sum() * 1e6, abs=1)


def test_trace_out_option(runs, tmp_path, capsys):
    out = tmp_path / "sub" / "t.json"
    assert main(["trace", str(runs["vllm_chain"]), "--out", str(out)]) == 0
    assert_valid_trace(json.loads(out.read_text()))


def test_changed_results_are_refused(runs, tmp_path, capsys):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    for name in ("config.json", "calls.parquet"):
        (run_dir / name).write_bytes((runs["vllm_chain"] / name).read_bytes())
    calls = pd.read_parquet(run_dir / "calls.parquet")
    calls.loc[3, "finished"] += 1e-6
    calls.to_parquet(run_dir / "calls.parquet", index=False)
    assert main(["trace", str(run_dir)]) == 2
    err = one_line_error(capsys, run_dir / "calls.parquet")
    assert "differ" in err and "finished" in err and "--force" in err
    assert not (run_dir / "trace.json").exists()


def test_missing_or_invalid_run_dir(runs, tmp_path, capsys):
    missing = tmp_path / "nothing"
    assert main(["trace", str(missing)]) == 2
    one_line_error(capsys, missing)
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["trace", str(empty)]) == 2
    one_line_error(capsys, empty / "config.json")
    (empty / "config.json").write_text("{not json")
    assert main(["trace", str(empty)]) == 2
    one_line_error(capsys, empty / "config.json")
    (empty / "config.json").write_text(json.dumps({"config": {"workload": {"kind": "nope"}}}))
    assert main(["trace", str(empty)]) == 2
    assert "invalid run config" in one_line_error(capsys, empty / "config.json")
    (empty / "config.json").write_bytes((runs["vllm_chain"] / "config.json").read_bytes())
    assert main(["trace", str(empty)]) == 2
    assert "not complete" in one_line_error(capsys, empty / "calls.parquet")
    assert not any(empty.glob("trace*"))
