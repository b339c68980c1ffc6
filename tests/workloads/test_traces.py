"""Trace loaders read the public sample traces and reject corrupted copies with a line number."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from pydantic import ValidationError

from parrotsim.workloads.app import prompt_tokens
from parrotsim.workloads.trace_workload import TraceReplay
from parrotsim.workloads.traces import TraceError, load_burstgpt, load_sharegpt_json, load_trace

RNG = np.random.default_rng(0)
LENGTH_FILES = {  # Vidur-style length tables without times: rows
    "sharegpt_8k_filtered_stats_llama2_tokenizer.csv": 30_731,
    "arxiv_summarization_stats_llama2_tokenizer_filtered_v2.csv": 28_257,
    "bwb_stats_llama2_tokenizer_filtered_v2.csv": 33_768,
    "sharegpt_first_turn_lengths_llama.csv": 15_485,
}


def _columns(path: Path, a: int, b: int) -> tuple[np.ndarray, np.ndarray]:
    data = np.loadtxt(path, delimiter=",", skiprows=1, usecols=(a, b))
    return data[:, 0].astype(int), data[:, 1].astype(int)


@pytest.mark.parametrize("name,rows", [("conv", 19_366), ("code", 8_819)])
def test_azure_matches_its_splitwise_copy(trace_dir, name, rows):
    azure = TraceReplay(path=str(trace_dir / f"AzureLLMInferenceTrace_{name}.csv")).build(RNG)
    vidur = TraceReplay(path=str(trace_dir / f"splitwise_{name}.csv"), format="vidur").build(RNG)
    assert len(azure) == len(vidur) == rows
    for apps in (azure, vidur):
        assert apps[0].arrival == 0.0 and all(a.kind == "trace" for a in apps[:10])
    assert np.allclose([a.arrival for a in azure], [a.arrival for a in vidur], atol=1e-5)
    ctx, gen = _columns(trace_dir / f"splitwise_{name}.csv", 1, 2)
    assert [prompt_tokens(a, a.calls[0]) for a in azure] == ctx.tolist()
    assert [a.calls[0].output_tokens for a in azure] == gen.tolist()


@pytest.mark.parametrize("file,rows", sorted(LENGTH_FILES.items()))
def test_length_tables(trace_dir, file, rows):
    trace = load_trace(trace_dir / file, "vidur")
    assert len(trace.requests) == rows and all(r.time is None for r in trace.requests[:5])
    cols = (1, 2) if file.startswith("sharegpt_first") else (0, 1)
    prompt, output = _columns(trace_dir / file, *cols)
    assert [r.prompt_tokens for r in trace.requests] == prompt.tolist()
    assert [r.output_tokens for r in trace.requests] == output.tolist()
    with pytest.raises(ValueError, match="no arrival times"):
        TraceReplay(path=str(trace_dir / file), format="vidur", limit=10).build(RNG)


def test_arrival_override_speedup_and_limit(trace_dir):
    path = str(trace_dir / "splitwise_conv.csv")
    fast = TraceReplay(path=path, format="vidur", speedup=2, start=5, limit=3).build(RNG)
    assert [a.arrival for a in fast][:2] == pytest.approx([5.0, 5 + 4.314579 / 2])
    assert len(fast) == 3
    cfg = TraceReplay(path=path, format="vidur", arrival="poisson", rate=4, limit=500)
    a, b = cfg.build(np.random.default_rng(1)), cfg.build(np.random.default_rng(2))
    assert a == cfg.build(np.random.default_rng(1))
    assert [x.arrival for x in a] != [x.arrival for x in b]
    assert abs(a[-1].arrival / 500 - 0.25) < 0.05
    with pytest.raises(ValidationError, match="needs a rate"):
        TraceReplay(path=path, arrival="gamma")
    with pytest.raises(ValidationError, match="not found"):
        TraceReplay(path=path + ".missing")


def _corrupt(src: Path, dst: Path, line: int, column: int, value: str) -> Path:
    lines = src.read_text().splitlines()[:60]
    fields = lines[line - 1].split(",")
    fields[column] = value
    lines[line - 1] = ",".join(fields)
    dst.write_text("\n".join(lines) + "\n")
    return dst


@pytest.mark.parametrize("file,fmt,column,value,problem", [
    ("AzureLLMInferenceTrace_conv.csv", "azure", 1, "12x", "ContextTokens: not a number"),
    ("AzureLLMInferenceTrace_code.csv", "azure", 0, "yesterday", "TIMESTAMP: not a timestamp"),
    ("AzureLLMInferenceTrace_conv.csv", "azure", 2, "0", "GeneratedTokens: must be at least 1"),
    ("splitwise_conv.csv", "vidur", 0, "soon", "arrived_at: not a time"),
    ("splitwise_code.csv", "vidur", 2, "3.5", "num_decode_tokens: not a whole number"),
    ("bwb_stats_llama2_tokenizer_filtered_v2.csv", "vidur", 0, "-4",
     "num_prefill_tokens: must be at least 1"),
    ("sharegpt_first_turn_lengths_llama.csv", "vidur", 1, "", "num_prefill_tokens: not a number"),
])
def test_corrupted_copies_name_the_line(trace_dir, tmp_path, file, fmt, column, value, problem):
    bad = _corrupt(trace_dir / file, tmp_path / file, 37, column, value)
    with pytest.raises(TraceError) as err:
        load_trace(bad, fmt)
    assert str(err.value).startswith(f"{bad}:37: {problem}")


def test_row_with_missing_field_and_missing_column(trace_dir, tmp_path):
    lines = (trace_dir / "splitwise_conv.csv").read_text().splitlines()[:10]
    lines[4] = "1.5,200"
    (tmp_path / "short.csv").write_text("\n".join(lines))
    with pytest.raises(TraceError, match=r"short\.csv:5: row: 2 fields, the header has 3"):
        load_trace(tmp_path / "short.csv", "vidur")
    (tmp_path / "nohead.csv").write_text("a,b\n1,2\n")
    with pytest.raises(TraceError, match=r"nohead\.csv:1: TIMESTAMP: missing column"):
        load_trace(tmp_path / "nohead.csv", "azure")


SHAREGPT = [
    {"id": "a", "conversations": [{"from": "human", "value": "x" * 40},
                                  {"from": "gpt", "value": "y" * 401}]},
    {"id": "b", "conversations": [{"from": "human", "value": "only one turn"}]},
    {"id": "c", "conversations": [{"from": "human", "value": "hi", "tokens": 3},
                                  {"from": "gpt", "value": "", "tokens": 7}, {"value": "z"}]},
]


def test_sharegpt_json_and_jsonl(tmp_path):
    (tmp_path / "s.json").write_text(json.dumps(SHAREGPT, indent=1))
    (tmp_path / "s.jsonl").write_text("\n".join(json.dumps(r) for r in SHAREGPT) + "\n")
    for name in ("s.json", "s.jsonl"):
        trace = load_sharegpt_json(tmp_path / name)
        assert [(r.prompt_tokens, r.output_tokens) for r in trace.requests] == [(10, 101), (3, 7)]
        assert trace.skipped == 1
    apps = TraceReplay(path=str(tmp_path / "s.json"), format="sharegpt_json",
                       arrival="constant", rate=2).build(RNG)
    assert [a.arrival for a in apps] == [0.0, 0.5]


def test_sharegpt_json_errors_name_the_line(tmp_path):
    bad = [dict(r) for r in SHAREGPT]
    bad[2] = {"id": "c", "conversations": [{"value": "q"}, {"value": 5}]}
    text = json.dumps(bad, indent=1)
    (tmp_path / "bad.json").write_text(text)
    line = text[:text.index('"id": "c"')].count("\n") + 1 - 1  # the record's opening brace
    with pytest.raises(TraceError) as err:
        load_sharegpt_json(tmp_path / "bad.json")
    assert str(err.value) == (f"{tmp_path / 'bad.json'}:{line}: conversations[1].value: "
                              "missing or not a string")
    (tmp_path / "broken.jsonl").write_text(json.dumps(SHAREGPT[0]) + "\n{\"id\": \n")
    with pytest.raises(TraceError, match=r"broken\.jsonl:2: json: "):
        load_sharegpt_json(tmp_path / "broken.jsonl")


BURST = """Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type
5,ChatGPT,472,18,490,Conversation log
45,ChatGPT,1087,0,1087,Conversation log
118,GPT-4,417,276,693,API log
140,ChatGPT,1360,1039,2399,Conversation log
"""


def test_burstgpt(tmp_path):
    (tmp_path / "b.csv").write_text(BURST)
    trace = load_burstgpt(tmp_path / "b.csv")
    assert [(r.time, r.prompt_tokens, r.output_tokens) for r in trace.requests] == [
        (5, 472, 18), (118, 417, 276), (140, 1360, 1039)]
    assert trace.skipped == 1
    gpt4 = TraceReplay(path=str(tmp_path / "b.csv"), format="burstgpt", models=["GPT-4"])
    assert [(a.arrival, a.calls[0].output_tokens) for a in gpt4.build(RNG)] == [(0.0, 276)]
    apps = TraceReplay(path=str(tmp_path / "b.csv"), format="burstgpt").build(RNG)
    assert [a.arrival for a in apps] == [0, 113, 135]
    (tmp_path / "bad.csv").write_text(BURST.replace("118,GPT-4,417", "118,GPT-4,lots"))
    with pytest.raises(TraceError, match=r"bad\.csv:4: Request tokens: not a number"):
        load_burstgpt(tmp_path / "bad.csv")


def test_shared_json_and_burstgpt_samples_if_any(trace_dir):
    samples = [(p, "sharegpt_json") for p in trace_dir.glob("*.json*")]
    samples += [(p, "burstgpt") for p in trace_dir.glob("BurstGPT*.csv")]
    if not samples:
        pytest.skip("no ShareGPT JSON or BurstGPT sample in ../shared/data/traces")
    for path, fmt in samples:
        assert load_trace(path, fmt, limit=1000).requests
